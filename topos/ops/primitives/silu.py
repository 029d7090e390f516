"""silu and silu_gradient: the sigmoid-weighted linear unit `x sigmoid(x)` (SwiGLU's gate),
and the gradient sent back through it.

The sigmoid is topos.ops.primitives.sigmoid's `1 / (1 + exp(-x))`, exactly 0 below about -88, so
very negative inputs give (a signed) 0 with a gradient of exactly 0, never the NaN of
the composed quotient's rule there. Fused so a gate over a transformer's widest
activations is one pass forward and one back, not the five nodes (and their rules) of the
composed form.
"""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters, recorded
from topos.ops.memory_order import follows_dense_operand
from topos.ops.memory_rules import ELEMENTWISE, MemoryRules
from topos.ops.primitive import declare_examples, primitive
from topos.ops.primitives.sigmoid import logistic
from topos.ops.shape_rules import fail, same
from topos.tensor import Shape


def _derive_silu(algebra, inputs, output, gradient, needs):
    return (algebra.silu_gradient(inputs[0], gradient),)


@primitive("silu", 1, same, _derive_silu, memory=ELEMENTWISE, value_method=True)
def silu(operand, out=None):
    """`x * sigmoid(x)` of each element (PyTorch's `silu`), stable for every input: as
    `x / (1 + exp(-x))`, one rounding fewer than a product with the sigmoid, and one pass
    fewer (PyTorch's own formula); `-0.0` where `exp(-x)` overflows."""
    kind = operand.dtype.type
    out = np.negative(operand, out=out)
    with np.errstate(over="ignore"):
        np.exp(out, out=out)
    np.add(out, kind(1), out=out)
    return np.divide(operand, out, out=out)


def _infer_silu_gradient(operand: Shape, gradient: Shape) -> Shape:
    if operand != gradient:
        raise fail("silu_gradient", f"operand {operand} and gradient {gradient} differ in shape")
    return operand


def _derive_silu_gradient(algebra, inputs, output, gradient, needs):
    # y = g silu'(x), silu' = s (1 + x (1 - s)). In g: h silu'(x), this very kernel. In
    # x: h g silu''(x), silu'' = s (1 - s) (2 + x (1 - 2 s)).
    operand, incoming = inputs
    operand_part = incoming_part = None
    if needs[0]:
        one = algebra.constant(1.0, Shape(()))
        two = algebra.constant(2.0, Shape(()))
        s = algebra.sigmoid(operand)
        complement = algebra.sub(one, s)
        bend = algebra.add(two, algebra.mul(operand, algebra.sub(complement, s)))
        curvature = algebra.mul(algebra.mul(s, complement), bend)
        operand_part = algebra.mul(algebra.mul(gradient, incoming), curvature)
    if needs[1]:
        incoming_part = algebra.silu_gradient(operand, gradient)
    return operand_part, incoming_part


def _one_scratch(operand: Shape, gradient: Shape) -> int:
    return operand.volume


@primitive(
    "silu_gradient",
    2,
    _infer_silu_gradient,
    _derive_silu_gradient,
    memory=MemoryRules(workspace=_one_scratch, layout=follows_dense_operand),
)
def silu_gradient(operand, gradient, out=None, workspace=None):
    """`g * silu'(x)`, as `g s (1 + x (1 - s))` with `s = sigmoid(x)`: one scratch."""
    kind = operand.dtype.type
    if out is None:
        out = np.empty(operand.shape, dtype=operand.dtype)
    if workspace is not None and workspace.size >= operand.size:
        s = workspace[: operand.size].reshape(operand.shape)
    else:
        s = np.empty(operand.shape, dtype=operand.dtype)
    logistic(operand, s)
    # out = 1 + x (1 - s), then times s and g
    np.subtract(kind(1), s, out=out)
    np.multiply(out, operand, out=out)
    np.add(out, kind(1), out=out)
    np.multiply(out, s, out=out)
    return np.multiply(out, gradient, out=out)


declare_examples(
    "silu",
    Example("silu", normal((3, 4)), on_parameters(lambda a: a.silu())),
)

declare_examples(
    "silu_gradient",
    Example("silu_gradient", normal((3, 4), (3, 4)), recorded("silu_gradient")),
)

# Emission: `x * sigmoid(x)`, and the gradient's formula -------------------------------


def _emit_silu_gradient(xp, x, gradient):
    s = xp.sigmoid(x)
    return gradient * s * (1.0 + x * (1.0 - s))


declare_emission("silu", lambda xp, x: x * xp.sigmoid(x))
declare_emission("silu_gradient", _emit_silu_gradient)

"""softplus: `log(1 + exp(beta x)) / beta`, and `x` itself where `beta x` passes
`threshold` (PyTorch's `softplus(beta=1, threshold=20)`).

The kernel computes `logaddexp(0, beta x)`, which never overflows; the derivative is
`sigmoid(beta x)`, itself stable for every input, and 1 in the linear region, as
PyTorch's: the rule is finite everywhere.
"""

from __future__ import annotations

import numpy as np

from topos.ops.corner import Corner
from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters
from topos.ops.memory_rules import ELEMENTWISE
from topos.ops.primitive import declare_examples, primitive
from topos.tensor import Shape


def _infer_softplus(operand: Shape, beta: float = 1.0, threshold: float = 20.0) -> Shape:
    return operand


def _derive_softplus(algebra, inputs, output, gradient, needs, beta=1.0, threshold=20.0):
    # sigmoid(beta x), and 1 where the output is x itself (beta x > threshold), as
    # PyTorch's rule.
    (operand,) = inputs
    scaled = operand if beta == 1.0 else algebra.mul(operand, algebra.constant(beta, Shape(())))
    linear = algebra.heaviside(algebra.sub(scaled, algebra.constant(threshold, Shape(()))))
    one = algebra.constant(1.0, Shape(()))
    return (algebra.mul(gradient, algebra.where(linear, one, algebra.sigmoid(scaled))),)


def _linear_side(inputs, output, beta=1.0, threshold=20.0):
    return np.greater(inputs[0] * beta, threshold)


@primitive(
    "softplus",
    1,
    _infer_softplus,
    _derive_softplus,
    memory=ELEMENTWISE,
    corner=Corner(_linear_side, "softplus at its threshold"),
)
def softplus(operand, out=None, beta=1.0, threshold=20.0):
    """`log(1 + exp(beta x)) / beta` of each element, `x` where `beta x > threshold`."""
    # A rank-0 operand arrives as a NumPy scalar where a caller passes no `out`: as an
    # array, every step below writes in place.
    operand = np.asarray(operand)
    kind = operand.dtype.type
    scaled = operand if beta == 1.0 else np.multiply(operand, kind(beta))
    smooth = np.logaddexp(kind(0), scaled, out=np.empty_like(operand))
    if beta != 1.0:
        np.divide(smooth, kind(beta), out=smooth)
    if out is None:
        out = smooth
    else:
        np.copyto(out, smooth)
    np.copyto(out, operand, where=scaled > threshold)
    return out


declare_examples(
    "softplus",
    Example(
        "softplus",
        normal((3, 4)),
        on_parameters(lambda a: a.tape.record("softplus", (a * 3.0,))),
    ),
    Example(
        "softplus_beta",
        normal((3, 4)),
        on_parameters(lambda a: a.tape.record("softplus", (a,), beta=2.0, threshold=3.0)),
    ),
)


def _emit_softplus(xp, x, beta=1.0, threshold=20.0):
    scaled = x * beta
    smooth = xp.logaddexp(scaled, xp.zeros_like(scaled)) / beta
    return xp.where(scaled > threshold, x, smooth)


declare_emission("softplus", _emit_softplus)

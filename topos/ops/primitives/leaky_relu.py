"""leaky_relu: `x` where it is positive, else `negative_slope * x` (PyTorch's
`leaky_relu`, whose gradient at 0 is the slope's, as here)."""

from __future__ import annotations

import numpy as np

from topos.ops.corner import Corner, positive_side
from topos.ops.emission import declare_emission
from topos.ops.example import Example, away_from_zero, on_parameters
from topos.ops.memory_rules import ELEMENTWISE
from topos.ops.primitive import declare_examples, primitive
from topos.tensor import Shape


def _infer_leaky_relu(operand: Shape, negative_slope: float = 0.01) -> Shape:
    return operand


def _derive_leaky_relu(algebra, inputs, output, gradient, needs, negative_slope=0.01):
    # The slope is 1 where x > 0 and `negative_slope` elsewhere (at 0 too, as PyTorch):
    # negative_slope + (1 - negative_slope) * heaviside(x). From the input, so any slope
    # (0, negative, above 1) gets its own mask.
    mask = algebra.heaviside(inputs[0])
    rise = algebra.constant(1.0 - negative_slope, Shape(()))
    floor = algebra.constant(negative_slope, Shape(()))
    return (algebra.mul(gradient, algebra.add(algebra.mul(mask, rise), floor)),)


@primitive(
    "leaky_relu",
    1,
    _infer_leaky_relu,
    _derive_leaky_relu,
    memory=ELEMENTWISE,
    corner=Corner(positive_side, "leaky_relu at 0"),
)
def leaky_relu(operand, out=None, negative_slope=0.01):
    """`x` where positive, else `negative_slope * x`, elementwise."""
    scaled = np.multiply(operand, operand.dtype.type(negative_slope))
    if out is None:
        return np.where(operand > 0, operand, scaled).astype(operand.dtype, copy=False)
    np.copyto(out, scaled)
    np.copyto(out, operand, where=operand > 0)
    return out


declare_examples(
    "leaky_relu",
    Example(
        "leaky_relu",
        away_from_zero((3, 4)),
        on_parameters(lambda a: a.tape.record("leaky_relu", (a,), negative_slope=0.2)),
    ),
)


def _emit_leaky_relu(xp, x, negative_slope=0.01):
    # A where, not the peer's leaky_relu: the same product, and the slope's gradient at 0.
    return xp.where(x > 0, x, x * negative_slope)


declare_emission("leaky_relu", _emit_leaky_relu)

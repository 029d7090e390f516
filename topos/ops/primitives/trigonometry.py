"""sin and cos: the circular functions of each element, each the other's derivative."""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters
from topos.ops.memory_rules import ELEMENTWISE
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import same


def _derive_sin(algebra, inputs, output, gradient, needs):
    return (algebra.mul(gradient, algebra.cos(inputs[0])),)


@primitive("sin", 1, same, _derive_sin, memory=ELEMENTWISE, value_method=True)
def sin(operand, out=None):
    """The sine of each element (radians)."""
    return np.sin(operand, out=out)


def _derive_cos(algebra, inputs, output, gradient, needs):
    # d cos(x) = -sin(x) dx, the sign on the gradient's side (a negation is exact).
    return (algebra.mul(algebra.neg(gradient), algebra.sin(inputs[0])),)


@primitive("cos", 1, same, _derive_cos, memory=ELEMENTWISE, value_method=True)
def cos(operand, out=None):
    """The cosine of each element (radians)."""
    return np.cos(operand, out=out)


declare_examples(
    "sin",
    Example("sin", normal((2, 3)), on_parameters(lambda a: (a * 2.0).sin())),
)

declare_examples(
    "cos",
    Example("cos", normal((2, 3)), on_parameters(lambda a: (a * 2.0).cos())),
)

declare_emission("sin", lambda xp, x: xp.sin(x))
declare_emission("cos", lambda xp, x: xp.cos(x))

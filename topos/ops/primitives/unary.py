"""exp, ln, sqrt, tanh, relu, heaviside, abs and power: elementwise functions of one
operand."""

from __future__ import annotations

import numpy as np

from topos.ops.corner import Corner, positive_side
from topos.ops.emission import declare_emission
from topos.ops.example import Example, away_from_zero, normal, on_parameters, positive
from topos.ops.memory_rules import ELEMENTWISE
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import same
from topos.tensor import Shape


def _derive_exp(algebra, inputs, output, gradient, needs):
    return (algebra.mul(gradient, output),)


@primitive("exp", 1, same, _derive_exp, memory=ELEMENTWISE, value_method=True)
def exp(operand, out=None):
    """e raised to each element."""
    return np.exp(operand, out=out)


def _derive_ln(algebra, inputs, output, gradient, needs):
    return (algebra.div(gradient, inputs[0]),)


@primitive("ln", 1, same, _derive_ln, memory=ELEMENTWISE, value_method=True)
def ln(operand, out=None):
    """The natural logarithm of each element."""
    return np.log(operand, out=out)


def _derive_sqrt(algebra, inputs, output, gradient, needs):
    return (algebra.div(gradient, algebra.add(output, output)),)


@primitive("sqrt", 1, same, _derive_sqrt, memory=ELEMENTWISE, value_method=True)
def sqrt(operand, out=None):
    """The square root of each element."""
    return np.sqrt(operand, out=out)


def _derive_tanh(algebra, inputs, output, gradient, needs):
    one = algebra.constant(1.0, Shape(()))
    return (algebra.mul(gradient, algebra.sub(one, algebra.mul(output, output))),)


@primitive("tanh", 1, same, _derive_tanh, memory=ELEMENTWISE, value_method=True)
def tanh(operand, out=None):
    """The hyperbolic tangent of each element."""
    return np.tanh(operand, out=out)


def _derive_relu(algebra, inputs, output, gradient, needs):
    # relu(x) > 0 exactly where x > 0 (NaN in both fails), so the mask can come from
    # the output: the input then need not outlive the forward pass in a forward plan.
    return (algebra.mul(gradient, algebra.heaviside(output)),)


@primitive(
    "relu",
    1,
    same,
    _derive_relu,
    memory=ELEMENTWISE,
    value_method=True,
    corner=Corner(positive_side, "relu at 0"),
)
def relu(operand, out=None):
    """max(x, 0) of each element."""
    return np.maximum(operand, operand.dtype.type(0), out=out)


def _derive_heaviside(algebra, inputs, output, gradient, needs):
    # The Heaviside step is flat wherever it has a derivative: no contribution at all.
    return (None,)


@primitive(
    "heaviside",
    1,
    same,
    _derive_heaviside,
    memory=ELEMENTWISE,
    value_method=True,
    corner=Corner(positive_side, "the Heaviside step at 0"),
)
def heaviside(operand, out=None):
    """1 where the element is positive, else 0 (NaN gives 0): the relu mask."""
    if out is None:
        out = np.empty_like(operand)
    # One pass: the comparison's booleans are cast to the output's dtype as they are stored.
    np.greater(operand, 0, out=out)
    return out


def _derive_abs(algebra, inputs, output, gradient, needs):
    # The sign of x as heaviside(x) - heaviside(-x): 0 at x = 0 (the subgradient PyTorch
    # takes), and no comparison of the gradient itself, so both routes run the same kernels.
    (operand,) = inputs
    sign = algebra.sub(algebra.heaviside(operand), algebra.heaviside(algebra.neg(operand)))
    return (algebra.mul(gradient, sign),)


@primitive(
    "abs",
    1,
    same,
    _derive_abs,
    memory=ELEMENTWISE,
    value_method=True,
    corner=Corner(positive_side, "abs at 0"),
)
def absolute(operand, out=None):
    """The absolute value of each element."""
    return np.absolute(operand, out=out)


def _derive_power(algebra, inputs, output, gradient, needs, exponent):
    # d(x^c)/dx = c x^(c-1); a constant exponent 0 makes a constant, which sends nothing.
    if exponent == 0.0:
        return (None,)
    (operand,) = inputs
    if exponent == 1.0:
        return (gradient,)
    if exponent == 2.0:
        slope = algebra.add(operand, operand)
    else:
        lowered = algebra.power(operand, exponent=exponent - 1.0)
        slope = algebra.mul(lowered, algebra.constant(exponent, Shape(())))
    return (algebra.mul(gradient, slope),)


def _infer_power(operand: Shape, exponent: float) -> Shape:
    return operand


@primitive("power", 1, _infer_power, _derive_power, memory=ELEMENTWISE)
def power(operand, out=None, exponent=1.0):
    """Each element raised to the constant `exponent` (a square as a product, exactly)."""
    if exponent == 2.0:
        return np.multiply(operand, operand, out=out)
    return np.power(operand, operand.dtype.type(exponent), out=out)


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "exp",
    Example("exp", normal((2, 3)), on_parameters(lambda a: a.exp())),
)

declare_examples(
    "ln",
    Example("ln", positive((2, 3)), on_parameters(lambda a: a.ln())),
)

declare_examples(
    "sqrt",
    Example("sqrt", positive((2, 3)), on_parameters(lambda a: a.sqrt())),
)

declare_examples(
    "tanh",
    Example("tanh", normal((2, 3)), on_parameters(lambda a: a.tanh())),
)

declare_examples(
    "relu",
    Example("relu", away_from_zero((3, 4)), on_parameters(lambda a: a.relu())),
)

declare_examples(
    "abs",
    Example("abs", away_from_zero((3, 4)), on_parameters(lambda a: a.abs())),
)

declare_examples(
    "heaviside",
    Example("heaviside", away_from_zero((3, 4)), on_parameters(lambda a: a.heaviside() * a)),
)

declare_examples(
    "power",
    Example("power_square", normal((2, 3)), on_parameters(lambda a: a**2)),
    Example("power_cube", normal((2, 3)), on_parameters(lambda a: a**3)),
    Example("power_inverse_root", positive((2, 3)), on_parameters(lambda a: a**-0.5)),
    Example("power_one", normal((2, 3)), on_parameters(lambda a: a**1)),
)

# Emission: how each is written in PyTorch and JAX (see topos.ops.emission) ------------

declare_emission("exp", lambda xp, x: xp.exp(x))
declare_emission("ln", lambda xp, x: xp.log(x))
declare_emission("sqrt", lambda xp, x: xp.sqrt(x))
declare_emission("tanh", lambda xp, x: xp.tanh(x))
# The mask is strict, as the rule's heaviside of the output: nothing flows back at 0.
declare_emission("relu", lambda xp, x: xp.where(x > 0, x, xp.zeros_like(x)))
declare_emission("heaviside", lambda xp, x: xp.as_float(x > 0))
declare_emission("abs", lambda xp, x: xp.abs(x))


def _emit_power(xp, x, exponent=1.0):
    if exponent == 2.0:
        return x * x
    return x**exponent


declare_emission("power", _emit_power)

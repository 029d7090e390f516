"""exp, ln, sqrt, tanh, relu, heaviside and abs: elementwise functions of one operand."""

from __future__ import annotations

import numpy as np

from topos.ops.kink import Kink, positive_side
from topos.ops.memory_order import follows_dense_operand
from topos.ops.primitive import primitive
from topos.ops.shape_rules import same
from topos.tensor import Shape


def _derive_exp(algebra, inputs, output, gradient, needs):
    return (algebra.mul(gradient, output),)


@primitive("exp", 1, same, _derive_exp, layout=follows_dense_operand, value_method=True)
def exp(operand, out=None):
    """e raised to each element."""
    return np.exp(operand, out=out)


def _derive_ln(algebra, inputs, output, gradient, needs):
    return (algebra.div(gradient, inputs[0]),)


@primitive("ln", 1, same, _derive_ln, layout=follows_dense_operand, value_method=True)
def ln(operand, out=None):
    """The natural logarithm of each element."""
    return np.log(operand, out=out)


def _derive_sqrt(algebra, inputs, output, gradient, needs):
    return (algebra.div(gradient, algebra.add(output, output)),)


@primitive("sqrt", 1, same, _derive_sqrt, layout=follows_dense_operand, value_method=True)
def sqrt(operand, out=None):
    """The square root of each element."""
    return np.sqrt(operand, out=out)


def _derive_tanh(algebra, inputs, output, gradient, needs):
    one = algebra.constant(1.0, Shape(()))
    return (algebra.mul(gradient, algebra.sub(one, algebra.mul(output, output))),)


@primitive("tanh", 1, same, _derive_tanh, layout=follows_dense_operand, value_method=True)
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
    layout=follows_dense_operand,
    value_method=True,
    kink=Kink(positive_side, "relu at 0"),
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
    layout=follows_dense_operand,
    value_method=True,
    kink=Kink(positive_side, "the Heaviside step at 0"),
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
    layout=follows_dense_operand,
    value_method=True,
    kink=Kink(positive_side, "abs at 0"),
)
def absolute(operand, out=None):
    """The absolute value of each element."""
    return np.absolute(operand, out=out)

"""add, sub, mul, div, neg: elementwise arithmetic, with rank-0 operands broadcast."""

from __future__ import annotations

import numpy as np

from topos.ops.primitive import primitive
from topos.ops.shape_rules import elementwise, same


def _derive_add(algebra, inputs, output, gradient, needs):
    left, right = inputs
    return (
        algebra.reduce_to(gradient, algebra.shape(left)) if needs[0] else None,
        algebra.reduce_to(gradient, algebra.shape(right)) if needs[1] else None,
    )


@primitive("add", 2, elementwise("add"), _derive_add)
def add(left, right, out=None):
    """Elementwise sum."""
    return np.add(left, right, out=out)


def _derive_sub(algebra, inputs, output, gradient, needs):
    left, right = inputs
    return (
        algebra.reduce_to(gradient, algebra.shape(left)) if needs[0] else None,
        algebra.reduce_to(algebra.neg(gradient), algebra.shape(right)) if needs[1] else None,
    )


@primitive("sub", 2, elementwise("sub"), _derive_sub)
def sub(left, right, out=None):
    """Elementwise difference."""
    return np.subtract(left, right, out=out)


def _derive_mul(algebra, inputs, output, gradient, needs):
    left, right = inputs
    return (
        algebra.reduce_to(algebra.mul(gradient, right), algebra.shape(left)) if needs[0] else None,
        algebra.reduce_to(algebra.mul(gradient, left), algebra.shape(right)) if needs[1] else None,
    )


@primitive("mul", 2, elementwise("mul"), _derive_mul)
def mul(left, right, out=None):
    """Elementwise product."""
    return np.multiply(left, right, out=out)


def _derive_div(algebra, inputs, output, gradient, needs):
    left, right = inputs
    left_part = right_part = None
    if needs[0]:
        left_part = algebra.reduce_to(algebra.div(gradient, right), algebra.shape(left))
    if needs[1]:
        # d(a/b)/db = -(a/b)/b, reusing the quotient the forward pass already made.
        scaled = algebra.div(algebra.mul(gradient, output), right)
        right_part = algebra.reduce_to(algebra.neg(scaled), algebra.shape(right))
    return left_part, right_part


@primitive("div", 2, elementwise("div"), _derive_div)
def div(left, right, out=None):
    """Elementwise quotient."""
    return np.divide(left, right, out=out)


def _derive_neg(algebra, inputs, output, gradient, needs):
    return (algebra.neg(gradient),)


@primitive("neg", 1, same, _derive_neg)
def neg(operand, out=None):
    """Elementwise negation."""
    return np.negative(operand, out=out)

"""add, sub, mul, div, neg: elementwise arithmetic, with rank-0 operands broadcast."""

from __future__ import annotations

import numpy as np

from topos.ops.memory_order import follows_dense_operand
from topos.ops.primitive import primitive
from topos.ops.reduction import reduce_to
from topos.ops.shape_rules import elementwise, same

# A row vector broadcast down a matrix with short rows (a bias over [rows, 16]) makes
# NumPy run one short inner loop per row. Elementwise arithmetic does not care how
# the elements are grouped, so such an operation runs on the matrix viewed as
# `[rows / k, k * columns]` against the row repeated k times: the same operations on
# the same elements, in loops k times longer.
_LONG_ROW = 1024


def _widened(left, right):
    """((left, right), wide shape) for an operation of a C-contiguous matrix with a
    row broadcast down it (on either side); None when that does not apply."""
    if getattr(left, "ndim", 0) != 2 or getattr(right, "ndim", 0) != 2:
        return None
    if left.shape != right.shape or left.dtype != right.dtype:
        return None
    rows, columns = left.shape
    if columns == 0 or columns >= _LONG_ROW or rows < 2:
        return None
    if left.strides[0] == 0 and right.flags.c_contiguous:
        row, matrix, row_left = left[0], right, True
    elif right.strides[0] == 0 and left.flags.c_contiguous:
        row, matrix, row_left = right[0], left, False
    else:
        return None
    want = -(-_LONG_ROW // columns)
    repeats = next((k for k in range(want, rows + 1) if rows % k == 0), rows)
    wide = matrix.reshape(rows // repeats, repeats * columns)
    tiled = np.tile(row, repeats)
    return ((tiled, wide) if row_left else (wide, tiled)), wide.shape


def _elementwise(ufunc, left, right, out):
    widened = _widened(left, right)
    if widened is None:
        return ufunc(left, right, out=out)
    (wide_left, wide_right), wide_shape = widened
    if out is None:
        return ufunc(wide_left, wide_right).reshape(left.shape)
    if out.flags.c_contiguous:
        ufunc(wide_left, wide_right, out=out.reshape(wide_shape))
    else:
        np.copyto(out, ufunc(wide_left, wide_right).reshape(left.shape))
    return out


def _derive_add(algebra, inputs, output, gradient, needs):
    left, right = inputs
    return (
        reduce_to(algebra, gradient, algebra.shape(left)) if needs[0] else None,
        reduce_to(algebra, gradient, algebra.shape(right)) if needs[1] else None,
    )


@primitive("add", 2, elementwise("add"), _derive_add, layout=follows_dense_operand)
def add(left, right, out=None):
    """Elementwise sum."""
    return _elementwise(np.add, left, right, out)


def _derive_sub(algebra, inputs, output, gradient, needs):
    left, right = inputs
    return (
        reduce_to(algebra, gradient, algebra.shape(left)) if needs[0] else None,
        reduce_to(algebra, algebra.neg(gradient), algebra.shape(right)) if needs[1] else None,
    )


@primitive("sub", 2, elementwise("sub"), _derive_sub, layout=follows_dense_operand)
def sub(left, right, out=None):
    """Elementwise difference."""
    return _elementwise(np.subtract, left, right, out)


def _derive_mul(algebra, inputs, output, gradient, needs):
    left, right = inputs
    return (
        reduce_to(algebra, algebra.mul(gradient, right), algebra.shape(left)) if needs[0] else None,
        reduce_to(algebra, algebra.mul(gradient, left), algebra.shape(right)) if needs[1] else None,
    )


@primitive("mul", 2, elementwise("mul"), _derive_mul, layout=follows_dense_operand)
def mul(left, right, out=None):
    """Elementwise product."""
    return _elementwise(np.multiply, left, right, out)


def _derive_div(algebra, inputs, output, gradient, needs):
    left, right = inputs
    left_part = right_part = None
    if needs[0]:
        left_part = reduce_to(algebra, algebra.div(gradient, right), algebra.shape(left))
    if needs[1]:
        # d(a/b)/db = -(a/b)/b, reusing the quotient the forward pass already made.
        scaled = algebra.div(algebra.mul(gradient, output), right)
        right_part = reduce_to(algebra, algebra.neg(scaled), algebra.shape(right))
    return left_part, right_part


@primitive("div", 2, elementwise("div"), _derive_div, layout=follows_dense_operand)
def div(left, right, out=None):
    """Elementwise quotient."""
    return _elementwise(np.divide, left, right, out)


def _derive_neg(algebra, inputs, output, gradient, needs):
    return (algebra.neg(gradient),)


@primitive("neg", 1, same, _derive_neg, layout=follows_dense_operand)
def neg(operand, out=None):
    """Elementwise negation."""
    return np.negative(operand, out=out)

"""add, sub, mul, div, neg: elementwise arithmetic, operands broadcast by NumPy's rules."""

from __future__ import annotations

import math

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, both, normal, on_parameters, positive
from topos.ops.memory_order import follows_dense_operand
from topos.ops.memory_rules import ELEMENTWISE, MemoryRules
from topos.ops.primitive import Primitive, declare_examples, primitive
from topos.ops.primitives.reduction import reduce_to
from topos.ops.shape_rules import elementwise, same

# A row vector broadcast down a matrix with short rows (a bias over [rows, 16], or a
# `[D]` operand over `[B, T, D]`) makes
# NumPy run one short inner loop per row. Elementwise arithmetic does not care how
# the elements are grouped, so such an operation runs on the matrix viewed as
# `[rows / k, k * columns]` against the row repeated k times: the same operations on
# the same elements, in loops k times longer. That pays only over many rows: setting it
# up costs about 10 us, more than NumPy's own row loops cost over a thousand rows
# (gpt's [1024, 64] bias add: 28 us as is, 38 us widened; cifar10's [65536, 16]: 800 us
# as is, 420 us widened).
_LONG_ROW = 1024
_MANY_ROWS = 8192


def _repeated_row(value, shape: tuple[int, ...]):
    """`value` as the flat row it repeats when broadcast to `shape`: a rank-2 view whose
    rows all alias one row (a `broadcast(axis=0, ...)`), or a C-contiguous operand whose shape,
    past leading 1s, is a trailing block of `shape` (a bias of `[D]` over `[B, T, D]`);
    else None."""
    if getattr(value, "ndim", 0) == 0 or value.size == 0:
        return None
    if value.shape == shape:
        if value.ndim == 2 and value.strides[0] == 0 and value[0].flags.c_contiguous:
            return value[0]
        return None
    extents = value.shape
    while extents and extents[0] == 1:
        extents = extents[1:]
    if not extents or tuple(shape[len(shape) - len(extents) :]) != extents:
        return None
    return value.reshape(-1) if value.flags.c_contiguous else None


def _widened(left, right):
    """((left, right), wide shape) for an operation of a C-contiguous operand with a row
    broadcast along it (on either side); None when that does not apply."""
    if getattr(left, "ndim", 0) == 0 or getattr(right, "ndim", 0) == 0:
        return None
    if left.dtype != right.dtype:
        return None
    shape = left.shape if left.ndim >= right.ndim else right.shape
    if left.shape == shape and left.flags.c_contiguous and right.shape != shape:
        row, full, row_left = _repeated_row(right, shape), left, False
    elif right.shape == shape and right.flags.c_contiguous and left.shape != shape:
        row, full, row_left = _repeated_row(left, shape), right, True
    elif left.shape == right.shape == shape and left.ndim == 2:
        # The broadcast(axis=0) form: one side a rank-2 view of one row.
        if left.strides[0] == 0 and right.flags.c_contiguous:
            row, full, row_left = _repeated_row(left, shape), right, True
        elif right.strides[0] == 0 and left.flags.c_contiguous:
            row, full, row_left = _repeated_row(right, shape), left, False
        else:
            return None
    else:
        return None
    if row is None:
        return None
    columns = row.shape[0]
    rows = full.size // columns if columns else 0
    if columns == 0 or columns >= _LONG_ROW or rows < _MANY_ROWS:
        return None
    want = -(-_LONG_ROW // columns)
    repeats = next((k for k in range(want, rows + 1) if rows % k == 0), rows)
    wide = full.reshape(rows // repeats, repeats * columns)
    # an assignment broadcast, a third of np.tile's cost
    tiled = np.empty(repeats * columns, dtype=row.dtype)
    tiled.reshape(repeats, columns)[...] = row
    return ((tiled, wide) if row_left else (wide, tiled)), wide.shape


def _elementwise(ufunc, left, right, out):
    # Each element's result depends on its two operands alone, so regrouping the
    # loops never changes a bit, and `out` may be either operand's own bytes (the
    # primitives declare `overwrites`: a bias is added in place into its product).
    widened = _widened(left, right)
    if widened is None:
        return ufunc(left, right, out=out)
    (wide_left, wide_right), wide_shape = widened
    shape = left.shape if left.ndim >= right.ndim else right.shape
    if out is None:
        return ufunc(wide_left, wide_right).reshape(shape)
    if out.flags.c_contiguous:
        ufunc(wide_left, wide_right, out=out.reshape(wide_shape))
    else:
        np.copyto(out, ufunc(wide_left, wide_right).reshape(shape))
    return out


def _never_widened(left: tuple[int, ...], right: tuple[int, ...]) -> bool:
    """Whether `_widened` answers None for operands of these shapes whatever their
    layout: one is rank 0, or no operand is a row repeated along the other over
    `_MANY_ROWS` rows of fewer than `_LONG_ROW` columns (its test, on shapes alone)."""
    if not left or not right:
        return True
    shape = left if len(left) >= len(right) else right
    if left == right:
        # Only a rank-2 view of one row (strides of 0, seen at run time) is widened.
        return len(shape) != 2 or shape[0] < _MANY_ROWS or shape[1] >= _LONG_ROW
    smaller = right if shape == left else left
    if shape not in (left, right):
        return True
    extents = tuple(smaller)
    while extents and extents[0] == 1:
        extents = extents[1:]
    if not extents or shape[len(shape) - len(extents) :] != extents:
        return True
    columns = math.prod(extents)
    rows = math.prod(shape) // columns if columns else 0
    return columns == 0 or columns >= _LONG_ROW or rows < _MANY_ROWS


def _specialize_binary(ufunc: np.ufunc):
    """The plan's form of an elementwise kernel for operands of given shapes: the bare
    ufunc when their shapes alone say `_widened` never regroups them, which is then
    the very call `_elementwise` makes; else None, and the kernel decides at run time."""

    def specialize(shapes, attributes):
        if len(shapes) == 2 and _never_widened(tuple(shapes[0]), tuple(shapes[1])):
            return ufunc
        return None

    return specialize


def _binary(name: str, ufunc: np.ufunc, derive, summary: str) -> Primitive:
    """Registers `name`, the elementwise `ufunc` of two operands broadcast against each
    other: its output follows a dense operand's memory order, and it may be written
    over either operand (each output element reads only the same element of each)."""

    def kernel(left, right, out=None):
        return _elementwise(ufunc, left, right, out)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = summary
    return primitive(
        name,
        2,
        elementwise(name),
        derive,
        memory=MemoryRules(layout=follows_dense_operand, overwrites=(0, 1)),
        specialize=_specialize_binary(ufunc),
    )(kernel)


def _derive_add(algebra, inputs, output, gradient, needs):
    left, right = inputs
    return (
        reduce_to(algebra, gradient, algebra.shape(left)) if needs[0] else None,
        reduce_to(algebra, gradient, algebra.shape(right)) if needs[1] else None,
    )


add = _binary("add", np.add, _derive_add, "Elementwise sum.")


def _derive_sub(algebra, inputs, output, gradient, needs):
    left, right = inputs
    return (
        reduce_to(algebra, gradient, algebra.shape(left)) if needs[0] else None,
        reduce_to(algebra, algebra.neg(gradient), algebra.shape(right)) if needs[1] else None,
    )


sub = _binary("sub", np.subtract, _derive_sub, "Elementwise difference.")


def _derive_mul(algebra, inputs, output, gradient, needs):
    left, right = inputs
    return (
        reduce_to(algebra, algebra.mul(gradient, right), algebra.shape(left)) if needs[0] else None,
        reduce_to(algebra, algebra.mul(gradient, left), algebra.shape(right)) if needs[1] else None,
    )


mul = _binary("mul", np.multiply, _derive_mul, "Elementwise product.")


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


div = _binary("div", np.divide, _derive_div, "Elementwise quotient.")


def _derive_neg(algebra, inputs, output, gradient, needs):
    return (algebra.neg(gradient),)


@primitive("neg", 1, same, _derive_neg, memory=ELEMENTWISE)
def neg(operand, out=None):
    """Elementwise negation."""
    return np.negative(operand, out=out)


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "add",
    Example("add", normal((2, 3), (2, 3)), on_parameters(lambda a, b: a + b)),
    Example("add_scalar_right", normal((2, 3), ()), on_parameters(lambda a, b: a + b)),
    Example("add_scalar_left", normal((), (2, 3)), on_parameters(lambda a, b: a + b)),
    Example("add_broadcast_row", normal((2, 3, 4), (4,)), on_parameters(lambda a, b: a + b)),
    Example("add_broadcast_row_left", normal((3, 4), (2, 3, 4)), on_parameters(lambda a, b: a + b)),
)

declare_examples(
    "sub",
    Example("sub", normal((2, 3), (2, 3)), on_parameters(lambda a, b: a - b)),
    Example("sub_scalar_right", normal((2, 3), ()), on_parameters(lambda a, b: a - b)),
    Example("sub_scalar_left", normal((), (2, 3)), on_parameters(lambda a, b: a - b)),
    Example(
        "sub_broadcast_keepdims", normal((2, 3, 4), (2, 3, 1)), on_parameters(lambda a, b: a - b)
    ),
)

declare_examples(
    "mul",
    Example("mul", normal((2, 3), (2, 3)), on_parameters(lambda a, b: a * b)),
    Example("mul_scalar_right", normal((2, 3), ()), on_parameters(lambda a, b: a * b)),
    Example("mul_scalar_left", normal((), (2, 3)), on_parameters(lambda a, b: a * b)),
    Example("mul_square", normal((2, 3)), on_parameters(lambda a: a * a)),
    Example("mul_broadcast_both", normal((2, 1, 4), (3, 1)), on_parameters(lambda a, b: a * b)),
)

declare_examples(
    "div",
    Example("div", both(normal((2, 3)), positive((2, 3))), on_parameters(lambda a, b: a / b)),
    Example(
        "div_scalar_right", both(normal((2, 3)), positive(())), on_parameters(lambda a, b: a / b)
    ),
    Example(
        "div_scalar_left", both(normal(()), positive((2, 3))), on_parameters(lambda a, b: a / b)
    ),
    Example(
        "div_broadcast",
        both(normal((2, 3, 4)), positive((3, 1))),
        on_parameters(lambda a, b: a / b),
    ),
)

declare_examples(
    "neg",
    Example("neg", normal((2, 3)), on_parameters(lambda a: -a)),
)

# Emission: how each is written in PyTorch and JAX (see topos.ops.emission) ------------

declare_emission("add", lambda xp, a, b: a + b)
declare_emission("sub", lambda xp, a, b: a - b)
declare_emission("mul", lambda xp, a, b: a * b)
declare_emission("div", lambda xp, a, b: a / b)
declare_emission("neg", lambda xp, a: -a)

"""rotary: rotary position embedding in the half-split convention (Llama's `rotate_half`),
given the tables of each position's cosines and sines.

For `x [..., T, d]` split into halves `x1, x2` of `d / 2` features, and tables
`cos, sin [T, d / 2]` (pair i of a position turns by that position's angle i):

    y1 = x1 cos - x2 sin,   y2 = x2 cos + x1 sin

which is `x * cat(cos, cos) + rotate_half(x) * cat(sin, sin)` with `rotate_half(x) =
cat(-x2, x1)`. `inverse` turns the other way (sin negated): a rotation's transpose is
its inverse, so that is the gradient of x, and the tables' gradients are sums of
products. Fused because the composed form is seven nodes on each of q and k per layer.
"""

from __future__ import annotations

import math

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters, record
from topos.ops.memory_rules import MemoryRules
from topos.ops.primitive import declare_examples, primitive
from topos.ops.primitives.reduction import reduce_to
from topos.ops.shape_rules import broadcast, fail
from topos.tensor import Shape


def _half(operand: Shape) -> Shape:
    return Shape((*tuple(operand)[:-1], operand[-1] // 2))


def _infer_rotary(operand: Shape, cos: Shape, sin: Shape, inverse: bool) -> Shape:
    if operand.rank < 1 or operand[-1] % 2:
        raise fail("rotary", f"shape {operand} has no even last axis to split in halves")
    if cos != sin:
        raise fail("rotary", f"tables {cos} and {sin} differ in shape")
    half = _half(operand)
    if cos.rank > half.rank or broadcast("rotary", half, cos) != half:
        raise fail("rotary", f"tables {cos} do not broadcast to the halves {half} of {operand}")
    return operand


def _derive_rotary(algebra, inputs, output, gradient, needs, inverse):
    operand, cos, sin = inputs
    parts = [None, None, None]
    if needs[0]:
        parts[0] = algebra.rotary(gradient, cos, sin, inverse=not inverse)
    if needs[1] or needs[2]:
        shape = algebra.shape(operand)
        half = shape[-1] // 2
        axis = shape.rank - 1
        first = algebra.narrow(operand, axis=axis, start=0, length=half)
        second = algebra.narrow(operand, axis=axis, start=half, length=half)
        upper = algebra.narrow(gradient, axis=axis, start=0, length=half)
        lower = algebra.narrow(gradient, axis=axis, start=half, length=half)
        if needs[1]:
            turned = algebra.add(algebra.mul(upper, first), algebra.mul(lower, second))
            parts[1] = reduce_to(algebra, turned, algebra.shape(cos))
        if needs[2]:
            # y1 = ... - s x2 sin, y2 = ... + s x1 sin, s = -1 when inverse
            if inverse:
                swung = algebra.sub(algebra.mul(upper, second), algebra.mul(lower, first))
            else:
                swung = algebra.sub(algebra.mul(lower, first), algebra.mul(upper, second))
            parts[2] = reduce_to(algebra, swung, algebra.shape(sin))
    return tuple(parts)


#: The most elements of the operand a block of `rotary` turns at once: its swapped copy
#: (the workspace) stays in L2 beside the block.
_BLOCK_ELEMENTS = 1 << 15


def _full_table(table: Shape, operand: Shape) -> Shape:
    """A table spread over both halves: its leading axes, the operand's last."""
    return Shape((*tuple(table)[:-1], operand[-1]))


def _block_rows(operand: Shape, table: Shape) -> int:
    """How many entries of the first axis a block takes: the whole operand when the tables
    reach the first axis (the same rank), else as many as keep a block within
    _BLOCK_ELEMENTS (at least one)."""
    if operand.rank <= table.rank or operand[0] == 0:
        return max(1, operand[0]) if operand.rank else 1
    entry = operand.volume // operand[0]
    return max(1, min(operand[0], _BLOCK_ELEMENTS // max(1, entry)))


def _workspace(operand: Shape, cos: Shape, sin: Shape, inverse: bool) -> int:
    # The two full tables, then a block's swapped halves (see the kernel).
    full = _full_table(cos, operand).volume
    if operand.rank == 0:
        return 2 * full
    block = _block_rows(operand, cos) * (operand.volume // max(1, operand[0]))
    return 2 * full + block


@primitive("rotary", 3, _infer_rotary, _derive_rotary, memory=MemoryRules(workspace=_workspace))
def rotary(operand, cos, sin, out=None, inverse=False, workspace=None):
    """Each position's feature pairs `(x_i, x_{i+d/2})` turned by its angles:
    `x1 cos - x2 sin, x2 cos + x1 sin` (the other way when `inverse`).

    As `x * cat(cos, cos) + swap(x) * cat(-sin, sin)`, `swap` exchanging the halves: every
    pass then runs over whole contiguous rows (a strided operand, q per head, is copied
    into `out` first), a block of the first axis at a time, and each element's arithmetic
    is the half-split formula's (a product with `-sin` is the negated product, and adding
    it is subtracting), so the bits are too."""
    if out is None:
        out = np.empty(operand.shape, dtype=operand.dtype)
    half = operand.shape[-1] // 2
    full = (*np.shape(cos)[:-1], operand.shape[-1])
    rows = _block_rows(Shape(operand.shape), Shape(np.shape(cos)))
    entry = operand[:1].size if operand.ndim else 1
    volume = math.prod(full)
    needed = 2 * volume + rows * entry
    if workspace is None or workspace.size < needed:
        workspace = np.empty(needed, dtype=operand.dtype)
    spread_cos = workspace[:volume].reshape(full)
    spread_sin = workspace[volume : 2 * volume].reshape(full)
    swapped = workspace[2 * volume : needed]
    # copyto and negative broadcast the tables themselves (np.broadcast_to costs µs)
    np.copyto(spread_cos[..., :half], cos)
    np.copyto(spread_cos[..., half:], cos)
    leading, trailing = (half, 0) if inverse else (0, half)
    np.copyto(spread_sin[..., trailing : trailing + half], sin)
    np.negative(sin, out=spread_sin[..., leading : leading + half])
    if operand.ndim < 2 or operand.ndim <= np.ndim(cos):
        _turn(operand, spread_cos, spread_sin, out, swapped[: operand.size].reshape(operand.shape))
        return out
    for first in range(0, operand.shape[0], rows):
        block = slice(first, first + rows)
        source = operand[block]
        term = swapped[: source.size].reshape(source.shape)
        _turn(source, spread_cos, spread_sin, out[block], term)
    return out


def _turn(operand, spread_cos, spread_sin, out, term) -> None:
    """One block's pairs turned into `out`: `x * spread_cos + swap(x) * spread_sin`, with
    `term` (the block's shape) holding the swapped halves."""
    half = operand.shape[-1] // 2
    if not operand.flags.c_contiguous:
        np.copyto(out, operand)  # one strided pass; the rest read contiguous rows
        operand = out
    np.copyto(term[..., :half], operand[..., half:])
    np.copyto(term[..., half:], operand[..., :half])
    np.multiply(operand, spread_cos, out=out)
    np.multiply(term, spread_sin, out=term)
    np.add(out, term, out=out)


# The tables are drawn first: the test weights the output with the draw's own seed, and
# weights equal to x would make the sine's gradient vanish exactly.
declare_examples(
    "rotary",
    Example(
        "rotary",
        normal((3, 2), (3, 2), (2, 3, 4)),
        on_parameters(lambda c, s, x: record("rotary", x, c, s, inverse=False)),
    ),
    Example(
        "rotary_inverse",
        normal((3, 3), (3, 3), (2, 3, 6)),
        on_parameters(lambda c, s, x: record("rotary", x, c, s, inverse=True)),
    ),
)

# Emission: the halves turned, as the kernel's formula ---------------------------------


def _emit_rotary(xp, x, cos, sin, inverse=False):
    half = x.shape[-1] // 2
    axis = len(x.shape) - 1
    first, second = xp.narrow(x, axis, 0, half), xp.narrow(x, axis, half, half)
    if inverse:
        sin = -sin
    return xp.concat([first * cos - second * sin, second * cos + first * sin], axis)


declare_emission("rotary", _emit_rotary)

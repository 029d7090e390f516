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

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters, record
from topos.ops.memory_rules import MemoryRules
from topos.ops.primitive import declare_examples, primitive
from topos.ops.reduction import reduce_to
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


def _block_scratch(operand: Shape, cos: Shape, sin: Shape, inverse: bool) -> int:
    # A block's product term and the two tables spread to its halves (see the kernel).
    blocks = operand[0] if operand.rank >= 3 and operand[0] else 1
    return 3 * (operand.volume // 2 // blocks)


def _turn(operand, cos, sin, out, term, inverse: bool) -> None:
    """One block's pairs turned, into `out`; the tables have the halves' shape exactly."""
    half = operand.shape[-1] // 2
    first, second = operand[..., :half], operand[..., half:]
    upper, lower = out[..., :half], out[..., half:]
    turn_first, turn_second = (np.add, np.subtract) if inverse else (np.subtract, np.add)
    np.multiply(first, cos, out=upper)
    np.multiply(second, sin, out=term)
    turn_first(upper, term, out=upper)
    np.multiply(second, cos, out=lower)
    np.multiply(first, sin, out=term)
    turn_second(lower, term, out=lower)


@primitive("rotary", 3, _infer_rotary, _derive_rotary, memory=MemoryRules(workspace=_block_scratch))
def rotary(operand, cos, sin, out=None, inverse=False, workspace=None):
    """Each position's feature pairs `(x_i, x_{i+d/2})` turned by its angles:
    `x1 cos - x2 sin, x2 cos + x1 sin` (the other way when `inverse`).

    One block of the first axis at a time, against tables spread to the block's halves:
    a ufunc over half-rows of a strided view (q per head) against broadcast tables runs
    buffered, allocating buffers each step that the memory plan does not know of. Each
    element's arithmetic is the same whichever way the elements are grouped."""
    if out is None:
        out = np.empty(operand.shape, dtype=operand.dtype)
    halves = (*operand.shape[:-1], operand.shape[-1] // 2)
    block = halves[1:] if operand.ndim >= 3 else halves
    volume = int(np.prod(block, dtype=np.int64))
    if workspace is not None and workspace.size >= 3 * volume:
        term, spread_cos, spread_sin = (
            workspace[k * volume : (k + 1) * volume].reshape(block) for k in range(3)
        )
    else:
        term, spread_cos, spread_sin = (np.empty(block, dtype=operand.dtype) for _ in range(3))
    np.copyto(spread_cos, np.broadcast_to(cos, block))
    np.copyto(spread_sin, np.broadcast_to(sin, block))
    if operand.ndim < 3:
        _turn(operand, spread_cos, spread_sin, out, term, inverse)
        return out
    for position in range(operand.shape[0]):
        _turn(operand[position], spread_cos, spread_sin, out[position], term, inverse)
    return out


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

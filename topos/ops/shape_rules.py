"""Shape rules shared by several primitives, each raising ShapeError with the operation's name."""

from __future__ import annotations

from topos.errors import ShapeError
from topos.tensor import Shape


def fail(operation: str, message: str) -> ShapeError:
    """A ShapeError whose message starts with the operation's name."""
    return ShapeError(f"{operation}: {message}")


def broadcast(operation: str, left: Shape, right: Shape) -> Shape:
    """The shape NumPy broadcasts `left` and `right` to: axes aligned from the last,
    missing leading axes and extents of 1 stretched to the other operand's."""
    if left == right or right.rank == 0:
        return left
    if left.rank == 0:
        return right
    extents = []
    for position in range(1, max(left.rank, right.rank) + 1):
        first = left[-position] if position <= left.rank else 1
        second = right[-position] if position <= right.rank else 1
        if first != second and 1 not in (first, second):
            raise fail(operation, f"shapes {left} and {right} do not broadcast")
        extents.append(second if first == 1 else first)
    return Shape(reversed(extents))


def elementwise(operation: str):
    """The rule of a binary elementwise operation: NumPy's broadcasting (equal shapes,
    a rank-0 side, `[B, T, D]` with `[D]` or `[B, T, 1]`)."""

    def infer(left: Shape, right: Shape) -> Shape:
        return broadcast(operation, left, right)

    return infer


def same(operand: Shape) -> Shape:
    """The rule of a unary elementwise operation: the output has the operand's shape."""
    return operand


def check_axis(operation: str, shape: Shape, axis: int) -> None:
    """Refuses an axis outside `0..rank-1` of `shape`."""
    if not 0 <= axis < shape.rank:
        raise fail(operation, f"axis {axis} is outside shape {shape} of rank {shape.rank}")


def replace_axis(shape: Shape, axis: int, extent: int) -> Shape:
    """`shape` with the extent of one axis replaced."""
    extents = list(shape)
    extents[axis] = extent
    return Shape(extents)

"""Shape rules shared by several primitives, each raising ShapeError with the operation's name."""

from __future__ import annotations

from topos.errors import ShapeError
from topos.tensor import Shape


def fail(operation: str, message: str) -> ShapeError:
    """A ShapeError whose message starts with the operation's name."""
    return ShapeError(f"{operation}: {message}")


def elementwise(operation: str):
    """The rule of a binary elementwise operation: equal shapes, or one side rank 0."""

    def infer(left: Shape, right: Shape) -> Shape:
        if left == right or right.rank == 0:
            return left
        if left.rank == 0:
            return right
        raise fail(operation, f"shapes {left} and {right} differ")

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

"""concat and stack: values joined along an axis (`torch.cat`, `torch.stack`)."""

from __future__ import annotations

from collections.abc import Sequence

from topos.errors import ShapeError
from topos.graph.value import Value


def _axis(axis: int, rank: int, operation: str) -> int:
    if not -rank <= axis < rank:
        raise ShapeError(f"{operation}: axis {axis} is outside rank {rank}")
    return axis + rank if axis < 0 else axis


def concat(values: Sequence[Value], axis: int = 0) -> Value:
    """The values one after another along `axis` (`torch.cat`): one binary `concat`
    node per value after the first; the gradient is cut apart by `narrow`s (views)."""
    values = list(values)
    if not values:
        raise ShapeError("concat: no values to join")
    axis = _axis(axis, values[0].shape.rank, "concat")
    result = values[0]
    for value in values[1:]:
        result = result.tape.record("concat", (result, value), axis=axis)
    return result


def stack(values: Sequence[Value], axis: int = 0) -> Value:
    """The values, all of one shape, along a new axis `axis` (`torch.stack`)."""
    values = list(values)
    if not values:
        raise ShapeError("stack: no values to stack")
    shape = tuple(values[0].shape)
    if any(tuple(value.shape) != shape for value in values):
        raise ShapeError(f"stack: shapes {[tuple(v.shape) for v in values]} differ")
    axis = _axis(axis, len(shape) + 1, "stack")
    widened = (*shape[:axis], 1, *shape[axis:])
    return concat([value.reshape(*widened) for value in values], axis)

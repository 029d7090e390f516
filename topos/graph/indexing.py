"""Basic indexing of a Value (`x[0]`, `x[..., a:b]`, `x[:, ::2]`, `x[None]`), as NumPy's
and PyTorch's basic indexing means it, recorded from existing primitives.

A slice with step 1 is a `narrow` (a view; its adjoint pads the gradient back); a slice
with another step (negative ones too) is a `gather` of the positions it picks; an
integer is a `narrow` of length 1 whose axis is then dropped; `None` inserts an axis of
1 and `...` stands for as many full slices as the key leaves. Dropping and inserting
axes is one `reshape` at the end. Advanced indexing (lists, arrays, Values) is refused:
`gather` picks entries by a list of positions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topos.errors import ShapeError

if TYPE_CHECKING:
    from topos.graph.value import Value


def _expanded(key: tuple[Any, ...], rank: int) -> list[Any]:
    """`key` with its `...` replaced by full slices (or appended ones when absent)."""
    ellipses = [position for position, item in enumerate(key) if item is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consuming = sum(1 for item in key if item is not None and item is not Ellipsis)
    if consuming > rank:
        raise IndexError(f"too many indices: {consuming} for a value of rank {rank}")
    fill = [slice(None)] * (rank - consuming)
    if not ellipses:
        return [*key, *fill]
    at = ellipses[0]
    return [*key[:at], *fill, *key[at + 1 :]]


def index(value: Value, key: Any) -> Value:
    """`value[key]` for a basic key: integers, slices (any step), `...` and `None`."""
    if not isinstance(key, tuple):
        key = (key,)
    shape = tuple(value.shape)
    result = value
    extents: list[int] = []  # the output's extents, in order
    axis = 0  # the axis of `result` the next consuming item applies to
    for item in _expanded(key, len(shape)):
        if item is None:
            extents.append(1)
            continue
        extent = result.shape[axis]
        if isinstance(item, bool) or not isinstance(item, (int, slice)):
            if hasattr(item, "__index__") and not isinstance(item, bool):
                item = int(item.__index__())
            else:
                raise TypeError(
                    f"a Value is indexed by integers, slices, '...' and None, not "
                    f"{type(item).__name__}; pick entries by position with .gather(axis, indices)"
                )
        if isinstance(item, int):
            position = item + extent if item < 0 else item
            if not 0 <= position < extent:
                raise ShapeError(f"index {item} is outside axis {axis} of shape {value.shape}")
            result = result.narrow(axis, position, 1)
            axis += 1
            continue
        start, stop, step = item.indices(extent)
        picked = range(start, stop, step)
        if step == 1:
            if len(picked) != extent:
                result = result.narrow(axis, start, len(picked))
        else:
            result = result.gather(axis, tuple(picked))
        extents.append(len(picked))
        axis += 1
    if tuple(extents) != tuple(result.shape):
        result = result.reshape(*extents)
    return result

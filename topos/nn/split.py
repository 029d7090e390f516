"""split: a value cut into consecutive pieces along an axis (`torch.split`)."""

from __future__ import annotations

from collections.abc import Sequence

from topos.errors import ShapeError
from topos.graph.value import Value


def split(value: Value, sizes: int | Sequence[int], axis: int = 0) -> list[Value]:
    """Pieces of `value` along `axis`, each a `narrow` (a view): of `sizes` each when an
    int (the last piece shorter if need be, as `torch.split`), else of the listed sizes,
    which must add up to the axis's extent."""
    rank = value.shape.rank
    if not -rank <= axis < rank:
        raise ShapeError(f"split: axis {axis} is outside shape {value.shape}")
    axis = axis + rank if axis < 0 else axis
    extent = value.shape[axis]
    if isinstance(sizes, int):
        if sizes < 1:
            raise ShapeError(f"split: pieces of {sizes} elements")
        lengths = [min(sizes, extent - start) for start in range(0, extent, sizes)]
    else:
        lengths = [int(size) for size in sizes]
        if sum(lengths) != extent or any(length < 0 for length in lengths):
            raise ShapeError(f"split: sizes {lengths} do not add up to axis {axis}'s {extent}")
    pieces, start = [], 0
    for length in lengths:
        pieces.append(value.narrow(axis, start, length))
        start += length
    return pieces

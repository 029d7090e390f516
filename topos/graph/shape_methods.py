"""ShapeMethods: a Value's shape changes spelled as PyTorch spells them (`flatten`,
`view`, `unsqueeze`, `squeeze`, `repeat`, `expand`, `matmul`), each recorded from
existing primitives (`reshape`, `broadcast`, `matmul`).

`expand` has PyTorch's meaning: extent-1 axes (and new leading ones) stretched to the
sizes given, `-1` keeping an extent, a view (`broadcast(to_shape=...)`). A rank-0 value
filled into a fresh array of a shape is `full`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from topos.errors import ShapeError

if TYPE_CHECKING:
    from topos.graph.value import Value


def _sizes(sizes: tuple, operation: str) -> tuple[int, ...]:
    """Sizes given one by one or as one sequence, as ints."""
    if len(sizes) == 1 and isinstance(sizes[0], Sequence):
        sizes = tuple(sizes[0])
    for size in sizes:
        if isinstance(size, bool) or not hasattr(size, "__index__"):
            raise TypeError(f"{operation}: sizes must be ints, not {type(size).__name__}")
    return tuple(int(size) for size in sizes)


def _position(axis: int, rank: int, operation: str) -> int:
    """An axis among `rank` positions, negative ones counted from the end."""
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeError(f"{operation}: dim must be an int, not {type(axis).__name__}")
    position = axis + rank if axis < 0 else axis
    if not 0 <= position < max(rank, 1):
        raise ShapeError(f"{operation}: dim {axis} is outside the {rank} axes")
    return position


class ShapeMethods:
    """Mixed into `Value`: each call records at most a few nodes, the operand never mutated."""

    __slots__ = ()

    def view(self: Value, *shape: int) -> Value:
        """The same elements under another shape, `-1` inferred (`Tensor.view`; `reshape`)."""
        return self.reshape(*_sizes(shape, "view"))

    def flatten(self: Value, start_dim: int = 0, end_dim: int = -1) -> Value:
        """Axes `start_dim` through `end_dim` merged into one (`torch.flatten`; a rank-0
        value becomes shape [1])."""
        extents = tuple(self.shape)
        if not extents:
            return self.reshape(1)
        start = _position(start_dim, len(extents), "flatten")
        end = _position(end_dim, len(extents), "flatten")
        if start > end:
            raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
        merged = 1
        for extent in extents[start : end + 1]:
            merged *= extent
        target = (*extents[:start], merged, *extents[end + 1 :])
        return self if target == extents else self.reshape(*target)

    def unsqueeze(self: Value, dim: int) -> Value:
        """A new axis of extent 1 at `dim` (`torch.unsqueeze`; negative counts from the end
        of the result)."""
        extents = list(self.shape)
        position = _position(dim, len(extents) + 1, "unsqueeze")
        extents.insert(position, 1)
        return self.reshape(*extents)

    def squeeze(self: Value, dim: int | Sequence[int] | None = None) -> Value:
        """Axes of extent 1 dropped: all, or those of `dim` (one or several) that have
        extent 1, the others left as they are (`torch.squeeze`)."""
        extents = tuple(self.shape)
        if dim is None:
            chosen = {position for position, extent in enumerate(extents) if extent == 1}
        else:
            axes = [dim] if isinstance(dim, int) else list(dim)
            chosen = {_position(axis, len(extents), "squeeze") for axis in axes}
            chosen = {position for position in chosen if position < len(extents)}
            chosen = {position for position in chosen if extents[position] == 1}
        target = tuple(extent for position, extent in enumerate(extents) if position not in chosen)
        return self if target == extents else self.reshape(*target)

    def expand(self: Value, *sizes: int) -> Value:
        """This value's extent-1 axes, and new leading axes, stretched to `sizes`; `-1`
        keeps an axis' extent (`Tensor.expand`, a view: `broadcast(to_shape=...)`)."""
        sizes = _sizes(sizes, "expand")
        extents = tuple(self.shape)
        lead = len(sizes) - len(extents)
        if lead < 0:
            raise ShapeError(
                f"expand: {len(sizes)} sizes {list(sizes)} for shape {self.shape} of rank "
                f"{len(extents)}; give at least one per axis"
            )
        target = []
        for position, size in enumerate(sizes):
            if position < lead:
                if size < 0:
                    raise ShapeError("expand: a new leading axis cannot keep its extent (-1)")
                target.append(size)
                continue
            extent = extents[position - lead]
            if size == -1:
                size = extent
            if extent != 1 and size != extent:
                raise ShapeError(
                    f"expand: axis {position - lead} of shape {self.shape} has extent "
                    f"{extent}, not 1, so it cannot become {size}"
                )
            target.append(size)
        if tuple(target) == extents:
            return self
        return self.tape.record("broadcast", (self,), to_shape=tuple(target))

    def full(self: Value, *shape: int) -> Value:
        """A rank-0 value filled into a fresh array of `shape` (records
        `broadcast(to_shape=shape, copy=True)`; `expand` gives a view of any value)."""
        return self.tape.record("broadcast", (self,), to_shape=_sizes(shape, "full"), copy=True)

    def repeat(self: Value, *sizes: int) -> Value:
        """The value tiled `sizes[i]` times along each axis, new leading axes for extra
        sizes (`Tensor.repeat`): a broadcast view per repeated axis, then one reshape."""
        sizes = _sizes(sizes, "repeat")
        extents = tuple(self.shape)
        if len(sizes) < len(extents):
            raise ShapeError(
                f"repeat: {len(sizes)} sizes {list(sizes)} for shape {self.shape}; give at "
                f"least one per axis"
            )
        if any(size < 0 for size in sizes):
            raise ShapeError(f"repeat: sizes {list(sizes)} must not be negative")
        grown = (1,) * (len(sizes) - len(extents)) + extents
        result = self if grown == extents else self.reshape(*grown)
        # From the last axis back, so the positions of the axes still to repeat hold.
        for position in reversed(range(len(grown))):
            if sizes[position] != 1:
                result = result.broadcast_along(position, sizes[position])
        target = tuple(size * extent for size, extent in zip(sizes, grown))
        return result if tuple(result.shape) == target else result.reshape(*target)

    def matmul(self: Value, other: Value) -> Value:
        """The matrix product as `torch.matmul` means it: vectors promoted and their axis
        dropped again, leading (batch) axes broadcast (see `topos.matmul`)."""
        from topos.graph.product import matmul

        return matmul(self, other)

"""Arena: one block of memory in which buffers whose lifetimes never overlap share bytes.

At lowering each buffer becomes an `Interval` (first and last step it is live, both
inclusive, and its size); `place` gives each an offset, aligned, so that no two
intervals that are live at a common step overlap in memory. At run time `Arena`
holds the block, allocated once, and hands out the slot views the kernels write into.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ALIGNMENT = 64


@dataclass(frozen=True)
class Interval:
    """A buffer `key` of `size` bytes, live from step `start` to step `end` inclusive."""

    key: object
    start: int
    end: int
    size: int


def aligned(size: int, alignment: int = ALIGNMENT) -> int:
    """`size` rounded up to a multiple of `alignment`."""
    return -(-size // alignment) * alignment


def place(intervals: Sequence[Interval], alignment: int = ALIGNMENT) -> tuple[dict, int]:
    """Offsets for every interval (by key) and the arena's size in bytes.

    Each buffer goes at the lowest aligned offset where it overlaps no placed buffer
    that is live at a common step (first fit over the gaps), in each of a few orders:
    largest first, then earliest; longest-lived bytes (size times lifetime) first; and
    earliest first, then largest. The smallest arena wins (the first order on a tie), so
    the layout is a pure function of the intervals.
    """
    orders = (
        lambda position: (-intervals[position].size, intervals[position].start, position),
        lambda position: (
            -intervals[position].size * (intervals[position].end - intervals[position].start + 1),
            intervals[position].start,
            position,
        ),
        lambda position: (intervals[position].start, -intervals[position].size, position),
    )
    best: tuple[dict, int] | None = None
    for key in orders:
        placed = _first_fit(intervals, sorted(range(len(intervals)), key=key), alignment)
        if best is None or placed[1] < best[1]:
            best = placed
    return best


def _first_fit(
    intervals: Sequence[Interval], order: Sequence[int], alignment: int
) -> tuple[dict, int]:
    """Places the intervals in `order`, each at the lowest aligned offset that fits."""
    placed: list[tuple[int, int, Interval]] = []  # (offset, aligned end, interval)
    offsets: dict = {}
    size = 0
    for position in order:
        interval = intervals[position]
        length = aligned(interval.size, alignment)
        busy = sorted(
            (offset, end)
            for offset, end, other in placed
            if other.start <= interval.end and interval.start <= other.end
        )
        offset = 0
        for busy_start, busy_end in busy:
            if offset + length <= busy_start:
                break
            offset = max(offset, busy_end)
        offsets[interval.key] = offset
        placed.append((offset, offset + length, interval))
        size = max(size, offset + length)
    return offsets, size


def slot_view(
    block: np.ndarray, offset: int, shape: tuple[int, ...], dtype: np.dtype, order: tuple[int, ...]
) -> np.ndarray:
    """The array of `shape` at `offset` in `block`, laid out with axes `order` outermost
    first (the identity order is C-contiguous)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    flat = block[offset : offset + count * dtype.itemsize].view(dtype)
    stored = flat.reshape(tuple(shape[axis] for axis in order))
    inverse = [0] * len(order)
    for position, axis in enumerate(order):
        inverse[axis] = position
    return stored.transpose(inverse)


class Arena:
    """The bytes of one plan's arena, allocated on first use and reused by every run."""

    def __init__(self, size: int, alignment: int = ALIGNMENT) -> None:
        self.size = size
        raw = np.empty(size + alignment, dtype=np.uint8)
        # Start the block on an aligned address: slot offsets are aligned relative to it.
        skip = (-raw.ctypes.data) % alignment
        self.block = raw[skip : skip + size]

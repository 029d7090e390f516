"""Arena: one block of memory in which buffers whose lifetimes never overlap share bytes.

At lowering each buffer becomes an `Interval` (first and last step it is live, both
inclusive, and its size); `place` gives each an offset, aligned, so that no two
intervals that are live at a common step overlap in memory. At run time `Arena`
holds the block, allocated once, and hands out the slot views the kernels write into.
"""

from __future__ import annotations

import random
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


#: How many perturbed orders `place` tries at most when no plain order reaches the
#: lower bound, and the first-fit work (intervals squared, summed over tries) it may
#: spend on them: a few hundred tries close the gap on the convnets' remat plans, and
#: the work cap keeps lowering a plan of a thousand buffers quick.
_SEARCH_TRIES = 400
_SEARCH_WORK = 8_000_000


def place(
    intervals: Sequence[Interval], alignment: int = ALIGNMENT, target: int | None = None
) -> tuple[dict, int]:
    """Offsets for every interval (by key) and the arena's size in bytes.

    Each buffer goes at the lowest aligned offset where it overlaps no placed buffer
    that is live at a common step (first fit over the gaps), in each of a few orders:
    largest first, then earliest; longest-lived bytes (size times lifetime) first;
    longest-lived first; and earliest first, then largest. When the best of them is
    above the lower bound (the most bytes live at one step), a local search swaps
    pairs in the best order, keeping each order no worse, until an arena of the bound,
    or of `target` bytes when that is larger, is found or the tries run out (none
    when the bound is above `target`). The
    swaps come from a fixed seed, so the layout is a pure function of the intervals.
    """
    count = len(intervals)
    conflicts = _conflicts(intervals)
    orders = (
        lambda position: (-intervals[position].size, intervals[position].start, position),
        lambda position: (
            -intervals[position].size * (intervals[position].end - intervals[position].start + 1),
            intervals[position].start,
            position,
        ),
        lambda position: (
            intervals[position].start - intervals[position].end,
            -intervals[position].size,
            position,
        ),
        lambda position: (intervals[position].start, -intervals[position].size, position),
    )
    best_order: list[int] = []
    best: tuple[dict, int] | None = None
    for key in orders:
        order = sorted(range(count), key=key)
        placed = _first_fit(intervals, conflicts, order, alignment)
        if best is None or placed[1] < best[1]:
            best, best_order = placed, order
    assert best is not None
    bound = lower_bound(intervals, alignment)
    goal = max(bound, target or 0)
    tries = min(_SEARCH_TRIES, _SEARCH_WORK // max(1, count * count))
    if target is not None and bound > target:
        # Not even a perfect placement would meet the target: the caller will look
        # for another schedule, so searching would only cost time.
        tries = 0
    generator = random.Random(0)
    for _ in range(tries):
        if best[1] <= goal or count < 2:
            break
        order = list(best_order)
        for _ in range(generator.randint(1, 4)):
            first, second = generator.randrange(count), generator.randrange(count)
            order[first], order[second] = order[second], order[first]
        placed = _first_fit(intervals, conflicts, order, alignment)
        if placed[1] <= best[1]:
            best, best_order = placed, order
    return best


def lower_bound(intervals: Sequence[Interval], alignment: int = ALIGNMENT) -> int:
    """The most aligned bytes live at one step: no placement can use fewer."""
    changes: dict[int, int] = {}
    for interval in intervals:
        length = aligned(interval.size, alignment)
        changes[interval.start] = changes.get(interval.start, 0) + length
        changes[interval.end + 1] = changes.get(interval.end + 1, 0) - length
    live = peak = 0
    for step in sorted(changes):
        live += changes[step]
        peak = max(peak, live)
    return peak


def _conflicts(intervals: Sequence[Interval]) -> list[list[int]]:
    """For each interval, the positions of the others live at a common step."""
    by_start = sorted(range(len(intervals)), key=lambda position: intervals[position].start)
    conflicts: list[list[int]] = [[] for _ in intervals]
    for rank, position in enumerate(by_start):
        end = intervals[position].end
        for other in by_start[rank + 1 :]:
            if intervals[other].start > end:
                break
            conflicts[position].append(other)
            conflicts[other].append(position)
    return conflicts


def _first_fit(
    intervals: Sequence[Interval],
    conflicts: Sequence[Sequence[int]],
    order: Sequence[int],
    alignment: int,
) -> tuple[dict, int]:
    """Places the intervals in `order`, each at the lowest aligned offset that fits."""
    offsets: list[int | None] = [None] * len(intervals)
    ends: list[int] = [0] * len(intervals)
    size = 0
    for position in order:
        length = aligned(intervals[position].size, alignment)
        busy = sorted(
            (offsets[other], ends[other])
            for other in conflicts[position]
            if offsets[other] is not None
        )
        offset = 0
        for busy_start, busy_end in busy:
            if offset + length <= busy_start:
                break
            offset = max(offset, busy_end)
        offsets[position] = offset
        ends[position] = offset + length
        size = max(size, offset + length)
    return {interval.key: offsets[i] for i, interval in enumerate(intervals)}, size


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

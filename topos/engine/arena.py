"""Arena: one block of memory in which buffers whose lifetimes never overlap share bytes.

At lowering each buffer becomes an `Interval` (first and last step it is live, both
inclusive, and its size); `place` gives each an offset, aligned, so that no two
intervals that are live at a common step overlap in memory. At run time `Arena`
holds the block, allocated once, and hands out the slot views the kernels write into.
"""

from __future__ import annotations

import math
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
    (`PlacementSearch` keeps the search, for more targets than one.)
    """
    return PlacementSearch(intervals, alignment).placement(target)


class PlacementSearch:
    """`place`'s search over one set of intervals, kept to answer more targets than one.

    Neither the plain orders nor the local search's trail of better placements depend
    on the target (only where the search stops does), so a placement for another
    target replays the trail, and tries further only past where it has been.
    """

    def __init__(self, intervals: Sequence[Interval], alignment: int = ALIGNMENT) -> None:
        self.intervals = list(intervals)
        count = len(intervals)
        self.lengths = [aligned(interval.size, alignment) for interval in intervals]
        self.conflicts = _conflicts(intervals)
        orders = (
            lambda position: (-intervals[position].size, intervals[position].start, position),
            lambda position: (
                -intervals[position].size
                * (intervals[position].end - intervals[position].start + 1),
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
        best: _Placed | None = None
        for key in orders:
            order = sorted(range(count), key=key)
            placed = self._first_fit(order)
            if best is None or placed.size < best.size:
                best = placed
        assert best is not None
        self.bound = lower_bound(intervals, alignment)
        self.tries = min(_SEARCH_TRIES, _SEARCH_WORK // max(1, count * count))
        self._generator = random.Random(0)
        self._tried = 0
        # Every placement the search has kept as its best, in the order it found them.
        self._trail: list[_Placed] = [best]

    def placement(self, target: int | None = None) -> tuple[dict, int]:
        """Offsets by key and the arena's size: what `place` gives for `target`."""
        count = len(self.intervals)
        if target is not None and self.bound > target:
            # Not even a perfect placement would meet the target: the caller will look
            # for another schedule, so searching would only cost time.
            return self._keyed(self._trail[0])
        goal = max(self.bound, target or 0)
        step = 0
        while True:
            placed = self._trail[step]
            if placed.size <= goal or count < 2:
                return self._keyed(placed)
            if step + 1 < len(self._trail):
                step += 1
            elif self._tried < self.tries:
                self._try()
            else:
                return self._keyed(placed)

    def _try(self) -> None:
        """One try of the local search: a few swaps in the best order, kept when they
        place no worse."""
        generator = self._generator
        count = len(self.intervals)
        best = self._trail[-1]
        order = list(best.order)
        first_change = count
        for _ in range(generator.randint(1, 4)):
            first, second = generator.randrange(count), generator.randrange(count)
            order[first], order[second] = order[second], order[first]
            first_change = min(first_change, first, second)
        placed = self._first_fit(order, best, first_change)
        self._tried += 1
        if placed.size <= best.size:
            self._trail.append(placed)

    def _first_fit(
        self, order: list[int], before: _Placed | None = None, start: int = 0
    ) -> _Placed:
        """Places the intervals in `order`, each at the lowest aligned offset that fits.
        The first `start` of them are placed as in `before`, whose order begins as this
        one does (first fit places each buffer by those before it alone)."""
        lengths, conflicts = self.lengths, self.conflicts
        if before is None or start == 0:
            offsets: list[int | None] = [None] * len(order)
            sizes: list[int] = []
            size = 0
        else:
            offsets = list(before.offsets)
            for position in order[start:]:
                offsets[position] = None
            sizes = before.sizes[:start]
            size = sizes[-1]
        for position in order[len(sizes) :]:
            length = lengths[position]
            busy = sorted(
                [
                    (offsets[other], other)
                    for other in conflicts[position]
                    if offsets[other] is not None
                ]
            )
            offset = 0
            for busy_start, other in busy:
                if offset + length <= busy_start:
                    break
                # Among buffers that start together the order does not matter: the
                # offset only grows to the farthest end of those that stand in the way.
                busy_end = busy_start + lengths[other]
                if busy_end > offset:
                    offset = busy_end
            offsets[position] = offset
            if offset + length > size:
                size = offset + length
            sizes.append(size)
        return _Placed(order, offsets, sizes)

    def _keyed(self, placed: _Placed) -> tuple[dict, int]:
        offsets = placed.offsets
        return {interval.key: offsets[i] for i, interval in enumerate(self.intervals)}, placed.size


@dataclass(frozen=True)
class _Placed:
    """One first fit: its order, each interval's offset (by position) and the arena's
    size after each placement along the order (the last is the arena's)."""

    order: list[int]
    offsets: list
    sizes: list[int]

    @property
    def size(self) -> int:
        return self.sizes[-1] if self.sizes else 0


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


def slot_view(
    block: np.ndarray, offset: int, shape: tuple[int, ...], dtype: np.dtype, order: tuple[int, ...]
) -> np.ndarray:
    """The array of `shape` at `offset` in `block`, laid out with axes `order` outermost
    first (the identity order is C-contiguous)."""
    dtype = np.dtype(dtype)
    count = math.prod(shape)  # np.prod costs some 5-20 µs a call; this runs per fresh buffer
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

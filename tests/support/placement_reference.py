"""The arena's placement as it was first written: a plain reference.

`reference_place` runs every first fit from scratch, once per call. `topos.engine.arena`
gets the same offsets faster (a search kept per set of intervals and reused for other
targets, tries that place only what follows their first swap); the tests compare the
two.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from topos.engine import arena
from topos.engine.arena import ALIGNMENT, Interval, aligned, lower_bound


def reference_place(
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
    # The arena's limits, read when called, so the two search as far.
    tries = min(arena._SEARCH_TRIES, arena._SEARCH_WORK // max(1, count * count))
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

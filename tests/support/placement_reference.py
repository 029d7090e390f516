"""The arena's placement, written again from its specification: a slow, plain reference.

What `topos.engine.arena.place` promises (its docstring is the specification):

- every buffer's length is its size rounded up to the alignment (64 bytes);
- two buffers conflict when they are live at a common step (both ends inclusive);
- a first fit takes the buffers in some order and puts each at the lowest offset where
  it overlaps no conflicting buffer already put; the arena is the highest end;
- four orders are tried, each tie broken by the buffer's position in the input:
  largest first, then earliest; most bytes times steps first, then earliest; longest
  lived first, then largest; earliest first, then largest. The first of the smallest
  arenas wins;
- the lower bound is the most aligned bytes live at one step. While the best arena is
  above max(bound, target) (and there are two buffers or more), a try swaps 1 to 4
  random pairs in the best order (`random.Random(0)`: `randint(1, 4)` swaps, each of
  two `randrange(count)`) and keeps the new order when its arena is no larger. At
  most min(400, 8,000,000 // count**2) tries; none when the bound is above `target`.

Nothing here is taken from `topos.engine` but the `Interval` the placement is given:
no conflict lists, no sorted sweep over busy ranges, no partial re-placement, no kept
search. Every first fit starts from nothing and checks every pair of buffers.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from topos.engine.arena import Interval

#: The alignment of every offset and length, in bytes (DESIGN.md: "offsets aligned to
#: 64 bytes").
ALIGNMENT = 64

#: The search's limits, as the specification states them: at most this many tries, and
#: no more than this work (buffers squared, per try) in all.
TRIES = 400
WORK = 8_000_000


def reference_place(
    intervals: Sequence[Interval], alignment: int = ALIGNMENT, target: int | None = None
) -> tuple[dict, int]:
    """Offsets by key and the arena's size in bytes, as `arena.place` must give them."""
    count = len(intervals)
    lengths = [_round_up(interval.size, alignment) for interval in intervals]

    def by_size_then_start(i):
        return (-intervals[i].size, intervals[i].start, i)

    def by_bytes_times_steps_then_start(i):
        steps = intervals[i].end - intervals[i].start + 1
        return (-(intervals[i].size * steps), intervals[i].start, i)

    def by_lifetime_then_size(i):
        steps = intervals[i].end - intervals[i].start + 1
        return (-steps, -intervals[i].size, i)

    def by_start_then_size(i):
        return (intervals[i].start, -intervals[i].size, i)

    best_order = None
    best_offsets = None
    best_size = None
    for key in (
        by_size_then_start,
        by_bytes_times_steps_then_start,
        by_lifetime_then_size,
        by_start_then_size,
    ):
        order = sorted(range(count), key=key)
        offsets, size = _first_fit(intervals, lengths, order)
        if best_size is None or size < best_size:
            best_order, best_offsets, best_size = order, offsets, size

    bound = _most_bytes_live_at_one_step(intervals, lengths)
    if target is not None and bound > target:
        tries = 0
    else:
        tries = min(TRIES, WORK // max(1, count * count))
    goal = bound if target is None else max(bound, target)
    generator = random.Random(0)
    tried = 0
    while best_size > goal and count >= 2 and tried < tries:
        order = list(best_order)
        swaps = generator.randint(1, 4)
        for _ in range(swaps):
            a = generator.randrange(count)
            b = generator.randrange(count)
            order[a], order[b] = order[b], order[a]
        offsets, size = _first_fit(intervals, lengths, order)
        tried += 1
        if size <= best_size:
            best_order, best_offsets, best_size = order, offsets, size

    placed = {}
    for i in range(count):
        placed[intervals[i].key] = best_offsets[i]
    return placed, best_size


def _round_up(size: int, alignment: int) -> int:
    return (size + alignment - 1) // alignment * alignment


def _live_together(first: Interval, second: Interval) -> bool:
    return first.start <= second.end and second.start <= first.end


def _apart(offset: int, length: int, other_offset: int, other_length: int) -> bool:
    """Whether the byte ranges [offset, offset + length) and the other one share no byte."""
    return offset + length <= other_offset or other_offset + other_length <= offset


def _first_fit(
    intervals: Sequence[Interval], lengths: list[int], order: list[int]
) -> tuple[list[int], int]:
    """Each buffer in `order` at the lowest offset where it fits among those put before
    it (by position), and the arena's size."""
    offsets: list[int | None] = [None] * len(intervals)
    arena = 0
    for i in order:
        # The lowest offset that fits is 0 or the end of a buffer in the way (moving any
        # other fitting offset down keeps it fitting until it reaches one of those).
        in_the_way = [
            j
            for j in range(len(intervals))
            if offsets[j] is not None and _live_together(intervals[i], intervals[j])
        ]
        candidates = sorted({0} | {offsets[j] + lengths[j] for j in in_the_way})
        for offset in candidates:
            if all(_apart(offset, lengths[i], offsets[j], lengths[j]) for j in in_the_way):
                break
        offsets[i] = offset
        arena = max(arena, offset + lengths[i])
    return offsets, arena


def _most_bytes_live_at_one_step(intervals: Sequence[Interval], lengths: list[int]) -> int:
    most = 0
    steps = set()
    for interval in intervals:
        steps.update(range(interval.start, interval.end + 1))
    for step in steps:
        live = 0
        for interval, length in zip(intervals, lengths, strict=True):
            if interval.start <= step <= interval.end:
                live += length
        most = max(most, live)
    return most

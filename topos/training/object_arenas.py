"""Carving the interpreter's object arenas before ready, so the steps' Python objects land
in pages resident already.

CPython's small-object allocator (objects up to 512 bytes) takes 1 MiB arenas from the
system and carves them into pools one at a time, the newest arena last: a pool's pages
are first written when it is carved. Only the newest arena has pools never carved
(another is made only when every pool of every arena is in use), but which of its
pools are carved at ready depends on where the start-up's objects happened to fall.
A step's objects (a run's views and records, a plan's bound kernels) come and go, and
when the pools freed at the end of one do not fit the next, the allocator carves more
of that arena: up to 1 MiB of pages that no plan says, in each process, within the
first hundreds of steps (cifar10's engine on a loaded machine: +0.5 MiB in the worker
and in its shard process in about one run in three, 1.02x the prediction).

So before ready every pool of every arena is carved (`carve_object_arenas`): as many
blocks of the largest size class are taken as the arenas have room for, and one more,
which needs a new arena, and then let go. The pools are then all written and free, and
the steps reuse them; the allocator's count of free pools says how many to take
(`sys._debugmallocstats`). Where there is no such count (not CPython) nothing happens.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile

#: The per-class rows of `sys._debugmallocstats`: class, size, pools, used, available.
_CLASS_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$")
_UNUSED_POOLS = re.compile(r"^(\d+) unused pools \* (\d+) bytes", re.MULTILINE)
_ARENAS_TOTAL = re.compile(r"^# arenas allocated total\s*=\s*([\d,]+)", re.MULTILINE)
_THRESHOLD = re.compile(r"^Small block threshold = (\d+)", re.MULTILINE)

#: The bytes object's size before its contents (CPython: header and the trailing NUL).
_BYTES_OVERHEAD = sys.getsizeof(b"")

#: Rounds of taking blocks before giving up (one suffices unless objects appear meanwhile).
_MOST_ROUNDS = 4


class _Statistics:
    """What `sys._debugmallocstats` says of the pools."""

    def __init__(self, text: str) -> None:
        threshold = _THRESHOLD.search(text)
        unused = _UNUSED_POOLS.search(text)
        arenas = _ARENAS_TOTAL.search(text)
        if threshold is None or unused is None or arenas is None:
            raise ValueError("unreadable allocator statistics")
        self.largest = int(threshold.group(1))
        self.unused_pools = int(unused.group(1))
        self.pool_bytes = int(unused.group(2))
        self.arenas_made = int(arenas.group(1).replace(",", ""))
        self.available = 0
        self.per_pool = 0
        for line in text.splitlines():
            row = _CLASS_ROW.match(line)
            if row is None:
                continue
            _, size, pools, used, available = (int(value) for value in row.groups())
            if size == self.largest:
                self.available = available
                self.per_pool = (used + available) // pools if pools else 0
        if not self.per_pool:
            # No pool of that class yet: a pool's header is 48 bytes on 64-bit CPython.
            self.per_pool = max(1, (self.pool_bytes - 48) // self.largest)


def _statistics() -> _Statistics | None:
    """The allocator's statistics (written by CPython to file descriptor 2), or None."""
    report = getattr(sys, "_debugmallocstats", None)
    if report is None:
        return None
    sys.stderr.flush()
    with tempfile.TemporaryFile("w+", encoding="utf-8") as capture:
        saved = os.dup(2)
        try:
            os.dup2(capture.fileno(), 2)
            report()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        text = capture.read()
    try:
        return _Statistics(text)
    except ValueError:
        return None


def carve_object_arenas() -> int:
    """Carves every pool of the small-object allocator's arenas (writing their pages) and
    frees them again; returns the bytes of the pools that were free, 0 where the
    allocator says nothing (not CPython, or statistics it cannot read)."""
    first = _statistics()
    if first is None:
        return 0
    statistics = first
    length = statistics.largest - _BYTES_OVERHEAD - 8  # a block of the largest class
    taken: list[bytes] = []
    for _ in range(_MOST_ROUNDS):
        count = statistics.available + (statistics.unused_pools + 1) * statistics.per_pool
        taken.extend(bytes(length) for _ in range(count))
        statistics = _statistics()
        if statistics is None or statistics.arenas_made > first.arenas_made:
            break  # a new arena was needed: every earlier one is carved whole
    del taken
    return first.unused_pools * first.pool_bytes

"""Memory settling: the warm-up's computation repeated until the process's resident set
stops moving, so what start-up leaves unsettled does not land in the training delta.

One computation brings a route's arenas, BLAS buffers and heap room in; what follows
in a run with many small Python objects on two shard threads is a creep: the
interpreter's free lists and malloc's heap ratchet up to the most that any
interleaving of the threads needs (gpt: some 400 KiB over its first 200 steps,
nothing a plan's shapes say). A computation that leaves the resident set where it
found it ends the settling; the cap keeps a run that never quite settles from
paying much for it (a gpt computation takes some 40 ms).
"""

from __future__ import annotations

from collections.abc import Callable

from topos.system import process_memory

#: The most computations repeated: gpt's creep mostly settles within these.
MOST_COMPUTATIONS = 8


def settle_memory(compute: Callable[[], object]) -> int:
    """Runs `compute` until a run of it leaves VmRSS unchanged (at most
    `MOST_COMPUTATIONS` times); returns how many times it ran."""
    for count in range(1, MOST_COMPUTATIONS + 1):
        before = process_memory.resident_bytes()
        compute()
        if before is None or process_memory.resident_bytes() == before:
            return count
    return MOST_COMPUTATIONS

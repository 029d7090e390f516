"""Every BLAS buffer the shards can take, touched before a measurement starts.

OpenBLAS (NumPy's, built without thread-local buffers) keeps a table of buffers,
each mapped on first use and touched only as far as a product packs its operands;
a product takes the first buffer no other product holds. With shards on threads,
buffer 1 is taken only while two products overlap in time, so how much of it the
warm-up step touches depends on how the threads were scheduled, and what it
missed (704 KiB for a 1024 -> 512 MLP) lands in the measured steps' memory.

`touch_blas_buffers` makes it deterministic: for each buffer j below the number of
shards, buffers 0..j-1 are held by long products on other threads (seen to have
started, and seen not to have finished when the work is done) while the work (one
shard's computation) runs, so its every product packs into buffer j. With
thread-local buffers the warm-up step already touched each thread's own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np

#: A holder's product: (SIDE x depth) @ (depth x SIDE) in float32, its packing about
#: 1 MiB, its depth doubled from FIRST_DEPTH until it outlasts the work.
SIDE = 256
FIRST_DEPTH = 4096
ATTEMPTS = 6


class _Holder:
    """One long product on a thread of its own, holding a BLAS buffer while it runs."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self._left = np.ones((SIDE, depth), np.float32)
        self._right = np.ones((depth, SIDE), np.float32)
        # NaN until the product writes it: BLAS writes only while it holds a buffer.
        self.out = np.full((SIDE, SIDE), np.nan, np.float32)
        self.thread = threading.Thread(target=self._run, name="topos-blas-holder", daemon=True)

    def _run(self) -> None:
        np.matmul(self._left, self._right, out=self.out)

    def started(self) -> bool:
        return not bool(np.isnan(self.out).all())

    def finished(self) -> bool:
        return bool((self.out == self.depth).all())


def _while_held(held: int, work: Callable[[], object], depth: int) -> bool:
    """Runs `work` while `held` holders hold buffers 0..held-1; False if one finished
    first (or never started), so buffer `held` may have missed a product."""
    holders = [_Holder(depth) for _ in range(held)]
    for holder in holders:
        holder.thread.start()
    deadline = time.monotonic() + 10.0
    while not all(holder.started() for holder in holders):
        if time.monotonic() > deadline or any(h.finished() for h in holders):
            break
        time.sleep(0.0002)
    ok = all(holder.started() and not holder.finished() for holder in holders)
    if ok:
        work()
        ok = not any(holder.finished() for holder in holders)
    for holder in holders:
        holder.thread.join()
    return ok


def touch_blas_buffers(buffers: int, work: Callable[[], object]) -> bool:
    """Runs `work` (which must run every product a thread runs in a step, on one BLAS
    thread) once into each of BLAS buffers 0..buffers-1; False if a holder could not
    be made to outlast it."""
    work()
    for held in range(1, buffers):
        depth = FIRST_DEPTH
        for _ in range(ATTEMPTS):
            if _while_held(held, work, depth):
                break
            depth *= 2
        else:
            return False
    return True

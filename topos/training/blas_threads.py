"""How many BLAS threads a shard's products run on while a step computes.

One by default, for every workload, a user's own of one shard too. OpenBLAS's threads
wait for each other by spinning (a product's threads meet at every block, and the
caller spins until its helpers are done): on a machine whose cores another program
keeps busy, a helper the scheduler has set aside holds every sibling spinning for a
whole time slice, and two such programs side by side starve each other (a one-shard
workload on two BLAS threads ran 59x its quiet step time beside a NumPy product loop on
two cores; `benchmarks/busy_neighbour.py`). One thread a shard never waits for a sibling,
so beside any neighbour it loses only its fair share of the cores. The shards are the
parallelism: a workload that wants the cores gives itself shards (cifar10 and gpt train
two, one a core), or asks for more BLAS threads with `Workload(blas_threads=N)`; None
leaves the process's BLAS as it is set (`OPENBLAS_NUM_THREADS`, `topos grade --threads`).

OpenBLAS's own waiting policy cannot be changed from here: how long an idle thread
spins before it sleeps (`OPENBLAS_THREAD_TIMEOUT`) is read once, when NumPy loads
OpenBLAS, before a workload exists, and a short timeout would not stop the spinning
inside a product, where the collapse is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

#: BLAS threads a shard computes on unless its workload says otherwise.
DEFAULT_BLAS_THREADS = 1


def shard_blas_threads(requested: int | None, shards: int, available: int) -> int | None:
    """The BLAS threads each shard's step computes on: `requested` (a workload's
    `blas_threads`), never more than the process's BLAS has (`available`, as
    `OPENBLAS_NUM_THREADS` or `--threads` set it), at least one. None leaves the BLAS
    as it is, except with shards on threads in one process, which take one thread each
    (more would put shards x threads spinning threads on the cores)."""
    if requested is not None and requested < 1:
        raise ValueError(f"blas_threads must be at least 1 (or None), not {requested}")
    if requested is None:
        return None if shards == 1 else 1
    return max(1, min(requested, available))


def blas_limit(requested: int | None, shards: int) -> tuple[int | None, Callable[[], Any]]:
    """The BLAS threads a shard computes on (`shard_blas_threads` against what the
    process's BLAS has now) and a factory of context managers holding the process's
    BLAS there while entered (a no-op for None). The thread pools are found once, so
    entering one costs microseconds a step."""
    if requested is None and shards == 1:
        return None, contextlib.nullcontext
    from threadpoolctl import ThreadpoolController

    controller = ThreadpoolController()
    counts = [pool["num_threads"] for pool in controller.info() if pool["user_api"] == "blas"]
    threads = shard_blas_threads(requested, shards, max(counts, default=1))

    def limit():
        return controller.limit(limits=threads, user_api="blas")

    return threads, limit

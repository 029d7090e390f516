"""How many threads a peer computes on: the workload's `blas_threads`, as a shard of
topos's routes does.

A peer runs its shards one after another in one program, each on the threads a shard of
topos's routes has (`Workload.blas_threads`, one by default): so a peer is never measured
on more threads a shard than the route it is compared with, and its threads, like
OpenBLAS's, do not spin waiting for a sibling a busy neighbour holds off its core (on
this project's 2-core machine, beside other work, one of PyTorch's products took 24 ms
on two threads and 3 ms on one). None leaves the peer as the process sets it
(`OMP_NUM_THREADS`, `topos grade --threads`).

PyTorch takes the count (`torch.set_num_threads`, and its inter-op pool where it is
still unset). JAX cannot: XLA's CPU client sizes its thread pool from the cores the
process may run on, and no `XLA_FLAGS` flag caps it (`--xla_cpu_multi_thread_eigen=false`
still leaves a product on two runnable threads on two cores); only the process's CPU
affinity would, which pins it to chosen cores rather than to a count of them. A JAX
peer computes on the process's cores, and its result says so (`threads: null`).
"""

from __future__ import annotations


def peer_threads(requested: int | None, available: int) -> int | None:
    """The threads a peer computes on: `requested` (a workload's `blas_threads`), never
    more than the peer has (`available`), at least one; None leaves the peer as it is."""
    if requested is None:
        return None
    if requested < 1:
        raise ValueError(f"blas_threads must be at least 1 (or None), not {requested}")
    return max(1, min(requested, available))

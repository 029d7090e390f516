"""The environment a worker process starts in, and the part of it a result records:
the mmap threshold, the BLAS threads, a peer's allocator settings."""

from __future__ import annotations

import os
from collections.abc import Mapping

from topos_cli.worker.protocol import GRADER_PID_VARIABLE

#: glibc's mmap threshold for workers unless the environment sets one: arrays above
#: 64 KiB get their own mappings and go back to the system when freed, so a route
#: that frees early is seen to be lean (glibc otherwise keeps them in its heap).
DEFAULT_MMAP_THRESHOLD = "65536"

#: The variables `--threads` sets, read by OpenBLAS, OpenMP and MKL as they load.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

#: Environment the result records (the machine's own OpenBLAS tuning is left as it is).
RECORDED_VARIABLES = (
    *THREAD_VARIABLES,
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "MALLOC_MMAP_THRESHOLD_",
)


def worker_environment(
    threads: int | None, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment a worker starts with: `base` (this process's by default), the
    mmap threshold unless `base` sets one, and `threads` for every BLAS if given."""
    environment = dict(os.environ if base is None else base)
    environment.setdefault("MALLOC_MMAP_THRESHOLD_", DEFAULT_MMAP_THRESHOLD)
    # The worker asks to die with this process, and checks it is still its parent.
    environment[GRADER_PID_VARIABLE] = str(os.getpid())
    if threads is not None:
        for variable in THREAD_VARIABLES:
            environment[variable] = str(threads)
    return environment


def peer_environment(
    environment: Mapping[str, str], base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A peer route's worker environment: `environment` without the grader's mmap
    threshold, unless `base` (this process's environment by default) sets one itself.
    PyTorch and JAX allocate a step's tensors afresh every step, and at the grader's 64
    KiB threshold each is a fresh mapping whose pages fault in again every step: PyTorch's
    cifar10 step took 2.4x its CPU time so (one thread, AMD EPYC). A PyTorch user runs
    with glibc's own threshold, so a peer is measured with it (its memory figures are
    then the heap's high-water mark: freed memory kept for reuse, not returned)."""
    base = os.environ if base is None else base
    peer = dict(environment)
    if "MALLOC_MMAP_THRESHOLD_" not in base:
        peer.pop("MALLOC_MMAP_THRESHOLD_", None)
    return peer


def environment_facts(environment: Mapping[str, str]) -> dict[str, str | None]:
    """The variables of `environment` that shape a measurement (`None` when unset)."""
    return {variable: environment.get(variable) for variable in RECORDED_VARIABLES}

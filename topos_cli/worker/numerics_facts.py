"""What a ready worker says of what it computes with: NumPy, the BLAS and its kernel,
NumPy's SIMD targets, the thread pools loaded, and the data it trains on."""

from __future__ import annotations

import os
from typing import Any

from topos_cli.result.data_facts import DataFacts
from topos_cli.result.worker_facts import Numerics


def dataset_facts(dataset: Any) -> DataFacts:
    """What a ready worker says of the data it trains on."""
    return DataFacts(
        name=dataset.name,
        source=dataset.source,
        format=dataset.format,
        fingerprint=dataset.fingerprint,
        train_images=len(dataset.train),
    )


def blas_description() -> Numerics:
    """Which NumPy and BLAS this worker computes with."""
    import numpy

    description: dict[str, Any] = {"numpy": numpy.__version__}
    try:
        config = numpy.show_config(mode="dicts")
        blas = config.get("Build Dependencies", {}).get("blas", {})
        description["blas"] = {
            key: blas.get(key) for key in ("name", "version", "openblas configuration")
        }
    except (TypeError, AttributeError):  # older NumPy without mode="dicts"
        description["blas"] = None
    description["environment"] = {
        key: os.environ.get(key)
        for key in (
            "OPENBLAS_NUM_THREADS",
            "OMP_NUM_THREADS",
            "MKL_NUM_THREADS",
            "OPENBLAS_CORETYPE",
            "OPENBLAS_L2_SIZE",
            "MALLOC_MMAP_THRESHOLD_",
        )
    }
    description["thread_pools"] = thread_pools()
    description["simd"] = numpy_simd()
    return Numerics.from_json(description)


def numpy_simd() -> list[str] | None:
    """The SIMD targets NumPy dispatches to on this CPU (as this process sees it: under
    Valgrind, the CPU Valgrind presents), or `None` where NumPy does not say."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1.x keeps it under numpy.core
        try:
            from numpy.core import _multiarray_umath as umath
        except ImportError:
            return None
    features = getattr(umath, "__cpu_features__", None)
    dispatch = getattr(umath, "__cpu_dispatch__", None)
    if not isinstance(features, dict) or dispatch is None:
        return None
    return [str(target) for target in dispatch if features.get(target)]


#: What of threadpoolctl's description of a pool the result keeps (not its file path).
THREAD_POOL_KEYS = (
    "user_api",
    "internal_api",
    "version",
    "architecture",
    "threading_layer",
    "num_threads",
    "prefix",
)


def thread_pools() -> list[dict[str, Any]]:
    """The native thread pools loaded now (the BLAS, OpenMP), as threadpoolctl sees them:
    which library, and which kernel it chose for this CPU; empty if it cannot tell."""
    try:
        from threadpoolctl import threadpool_info

        pools = threadpool_info()
    except Exception:  # optional fact: an unknown library must not fail a grade
        return []
    return [
        {
            key: (str(pool[key]) if key != "num_threads" else pool[key])
            for key in THREAD_POOL_KEYS
            if pool.get(key) is not None
        }
        for pool in pools
    ]

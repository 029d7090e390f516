"""How much memory a call allocates through NumPy, for the tests that kernels use their
workspace instead of temporaries."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable


def peak_allocation(call: Callable[[], object]) -> int:
    """The largest amount of memory `call` held at once beyond what it started with
    (tracemalloc sees NumPy's data allocations)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        call()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()

"""A worker's memory where /proc is missing (macOS): coarser readings, and said so.

On Linux the worker resets the kernel's high-water mark at ready and reads it after the
steps: an exact peak. Elsewhere there is no reset and no VmRSS, so the peak comes from
what can be read: the resident set through psutil at each step's peak (`StepPeak`), the
harness's sampling every few milliseconds, and `ru_maxrss` (the process's peak since it
started, which cannot be reset): when it rose during the steps, it is the steps' peak.
A result whose peak came this way says `sampling`, never `VmHWM`: the figure is sampled,
not exact, and a peak shorter than the interval between readings can be missed.
"""

from __future__ import annotations

import sys

from topos.system import process_memory


def resident_bytes() -> int | None:
    """The resident set now: VmRSS from /proc, else psutil's reading (macOS); None if
    neither can tell."""
    value = process_memory.resident_bytes()
    if value is not None:
        return value
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except Exception:  # psutil raises platform-specific errors; the reading is optional
        return None


def max_resident_bytes() -> int | None:
    """`ru_maxrss` of this process in bytes: its peak resident set since it started (Linux
    counts KiB, macOS bytes); None where `resource` is missing (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    scale = 1 if sys.platform == "darwin" else 1024
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * scale


def sampled_peak(
    step_peak: int | None, max_at_ready: int | None, max_now: int | None
) -> int | None:
    """The steps' peak without /proc: the largest resident set read at a step's peak, or
    `ru_maxrss` when it rose after ready (then it is the peak of the steps, exactly)."""
    readings = [value for value in (step_peak,) if value is not None]
    if max_now is not None and max_at_ready is not None and max_now > max_at_ready:
        readings.append(max_now)
    return max(readings) if readings else None

"""Process memory from /proc: the resident set now, its high-water mark, and resetting it.

These are read inside the worker, about itself. Where /proc is missing (not
Linux) every reader answers None and the grader falls back to sampling.
"""

from __future__ import annotations

from pathlib import Path

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_bytes(field: str) -> int | None:
    try:
        text = STATUS.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return None


def resident_bytes() -> int | None:
    """VmRSS: the resident set size now, in bytes."""
    return _status_bytes("VmRSS")


def high_water_bytes() -> int | None:
    """VmHWM: the peak resident set size since start or the last reset, in bytes."""
    return _status_bytes("VmHWM")


def reset_high_water() -> bool:
    """Resets VmHWM to the current RSS (writing 5 to clear_refs); False where unsupported."""
    try:
        CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True

"""A process's memory from /proc: the resident set now, its high-water mark and resetting
it, and a process's private memory (USS, the pages no other process maps).

A forked child shares its parent's pages copy on write, so its VmRSS counts pages the
parent's VmRSS counts too. Its own cost is what is private to it, `Private_Clean +
Private_Dirty` of `/proc/PID/smaps_rollup`: a page the child writes (its arena, its
gradients) or one the parent writes after the fork (the child keeps the old copy).
Where /proc is missing (not Linux) every reader answers None and callers fall back to
sampling.
"""

from __future__ import annotations

STATUS = "/proc/self/status"
CLEAR_REFS = "/proc/self/clear_refs"


def _status_bytes(field: str) -> int | None:
    """A `kB` field of this process's /proc status, in bytes; None without /proc."""
    try:
        with open(STATUS) as status:
            text = status.read()
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
        with open(CLEAR_REFS, "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        return False
    return True


def private_bytes(pid: int | str = "self") -> int | None:
    """USS of process `pid` in bytes (this process by default); None once it is gone or
    without /proc.

    Read through `open` with a plain string: a shard's process reads this after every
    step, and `pathlib` interns each part of a path it parses, so `smaps_rollup` would
    be interned and dropped again every step, a used entry of the interpreter's table
    of interned strings each time (see `topos.ops.split_view` for what that costs)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            text = rollup.read()
    except OSError:
        return None
    total = 0
    for line in text.splitlines():
        if line.startswith(("Private_Clean:", "Private_Dirty:")):
            total += int(line.split()[1]) * 1024
    return total

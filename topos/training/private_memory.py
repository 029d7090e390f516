"""A process's private memory (USS): the pages no other process maps.

A forked child shares its parent's pages copy on write, so its VmRSS counts pages the
parent's VmRSS counts too. Its own cost is what is private to it, `Private_Clean +
Private_Dirty` of `/proc/PID/smaps_rollup`: a page the child writes (its arena, its
gradients) or one the parent writes after the fork (the child keeps the old copy).
"""

from __future__ import annotations


def private_bytes(pid: int | str = "self") -> int | None:
    """USS of process `pid` in bytes (this process by default); None without /proc.

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

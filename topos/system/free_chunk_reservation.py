"""Free chunk reservation: the heap's free chunks large enough for a mapped-size request,
taken out of malloc's reach before the warm-up, so every array at the mmap threshold or past it gets
pages of its own, as the step's memory prediction assumes (`topos.training.resident_bytes`).

glibc serves a request from a free heap chunk that fits before it maps anything, whatever
the threshold. A chunk that start-up left free (loading, lowering, holding the batches)
would take the warm-up step's feeds, and every measured step's after it, in pages resident
since before ready: the measured training delta would miss them (232 KiB of mnist's, in
one start-up). So the worker allocates every such chunk, a request at the threshold at a
time until malloc maps one (then none fits), and never frees it: its pages stay in the
RSS at ready, where they already were. Only with glibc's malloc (which has `mallinfo2`),
whose chunk headers it reads; elsewhere nothing.

A forked shard process does the same as it starts (`topos.training.shard_processes`): the
free chunks its parent's heap held at the fork are its own, and would take its runs'
blocks of small roots (`topos.engine.fresh_block`) in pages its warm-up already made
private, so its measured delta would miss them.
"""

from __future__ import annotations

import ctypes

#: The most plugs taken: 1 GiB of free heap at the default threshold, far past any start-up.
MOST_PLUGS = 16384


#: What `reserve_free_chunks` took, kept for the process's life.
_plugs: list[int] = []


#: The flags in the size word of glibc's chunk header, just below the pointer malloc
#: returns: the chunk was mapped, or belongs to a thread's arena rather than the main heap.
MAPPED_CHUNK = 0x2
THREAD_ARENA_CHUNK = 0x4


def _chunk_flags(pointer: int) -> int:
    """The flag bits of the glibc chunk at `pointer` (what malloc returned)."""
    word = ctypes.sizeof(ctypes.c_size_t)
    return ctypes.c_size_t.from_address(pointer - word).value & 0x7


def reserve_free_chunks(threshold: int) -> int:
    """Allocates every free heap chunk of `threshold` bytes or more, keeping them; returns
    how many bytes it took (0 where malloc is not glibc's).

    Each request is judged by its own chunk's header and the program break, never by
    `mallinfo2`: that walks every free list of every arena, some 5 ms a call in a process
    whose heap many threads and tests have cut up, and a reservation asks per request, up
    to `MOST_PLUGS` times (a forked shard process of such a process spent over a minute
    here)."""
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return 0
    if not hasattr(libc, "mallinfo2") or not hasattr(libc, "sbrk"):
        return 0  # not glibc's malloc, whose chunk headers this reads
    program_break = libc.sbrk
    program_break.restype = ctypes.c_void_p
    program_break.argtypes = [ctypes.c_ssize_t]
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    taken = 0
    while len(_plugs) < MOST_PLUGS:
        top = program_break(0)
        pointer = libc.malloc(threshold)
        if not pointer:
            break
        # Mapped, carved from a heap that had to grow (a threshold above `threshold`), or
        # from a thread's arena, whose growth the break does not show: no free chunk that
        # large is left in the main heap.
        if _chunk_flags(pointer) & (MAPPED_CHUNK | THREAD_ARENA_CHUNK) or program_break(0) != top:
            libc.free(pointer)
            break
        _plugs.append(pointer)
        taken += threshold
    return taken

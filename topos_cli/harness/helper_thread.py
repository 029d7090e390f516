"""The grading parent's own threads (each pipe's reader, the memory sampler), started
with small stacks.

A thread's stack is reserved whole when it starts: by default as much as the stack
limit (8 MiB), so under an address-space limit (`ulimit -v 250000`) the parent could not
start the threads that watch its workers (`can't start new thread`, and the whole grade
was an internal error) though they need a few KiB each. Started with `HELPER_STACK_BYTES`,
they fit wherever the parent itself does, and a worker that runs out of memory is a
route failing with its MemoryError, as it should be.
"""

from __future__ import annotations

import threading

from topos_cli.shared.errors import ToposError

#: A helper thread's stack: ample for reading a pipe, parsing events and sampling memory.
HELPER_STACK_BYTES = 1024 * 1024


def start_helper(thread: threading.Thread) -> None:
    """Starts `thread` with a stack of `HELPER_STACK_BYTES` (the size for threads started
    later is left as it was); raises `ToposError` (exit 1, one line) when even that
    cannot be had."""
    previous = threading.stack_size(HELPER_STACK_BYTES)
    try:
        thread.start()
    except RuntimeError as error:
        raise ToposError(
            f"out of memory: cannot start the thread {thread.name!r} that watches a worker "
            f"({error}); is the address space limited (ulimit -v)?"
        ) from None
    finally:
        threading.stack_size(previous)

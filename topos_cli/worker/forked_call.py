"""forked_call: a computation run in a forked copy of the worker, its JSON answer sent back.

What the copy allocates, the threads it starts and the process-wide switches it sets
(JAX's 64-bit mode) die with it: the worker's own memory at ready, its step times and its
peer's float32 program are left as they would be without it. Linux only, and only while
the worker has one Python thread (forking a process with more is unsafe); elsewhere the
caller computes what it can in the worker itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable
from typing import Any


def forking_is_safe() -> bool:
    """Whether this worker may fork a copy of itself: Linux, one Python thread."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


def forked_call(compute: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
    """`compute()` run in a forked copy of this process and its dict, sent back as JSON;
    None when no copy could be forked or the copy did not end well."""
    if not forking_is_safe():
        return None
    reading, writing = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(reading)
        os.close(writing)
        return None
    if pid == 0:  # the copy: compute, send, and end without running anything of the worker's
        status = 1
        try:
            os.close(reading)
            data = json.dumps(compute()).encode("utf-8")
            with os.fdopen(writing, "wb") as stream:
                stream.write(data)
            status = 0
        finally:
            os._exit(status)
    os.close(writing)
    with os.fdopen(reading, "rb") as stream:
        data = stream.read()
    with contextlib.suppress(ChildProcessError):
        _, status = os.waitpid(pid, 0)
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            return None
    try:
        answer = json.loads(data.decode("utf-8"))
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None

"""A computation run in a forked copy of this process, its bytes sent back over a pipe.

What the copy allocates, the threads it starts and the process-wide switches it sets die
with it. Forking is safe only on Linux and only while this process has one thread (a
fork copies the calling thread alone, and a lock another thread held stays locked in the
copy); callers compute in this process where it is not.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass


def forking_is_safe() -> bool:
    """Whether this process may fork a copy of itself: Linux, one Python thread."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


@dataclass(frozen=True)
class ForkedCopy:
    """A forked copy computing bytes: its process and the read end of the pipe they come on."""

    pid: int
    reading: int

    @classmethod
    def start(cls, produce: Callable[[], bytes]) -> ForkedCopy | None:
        """Starts `produce` in a forked copy of this process; None if no fork could start."""
        reading, writing = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(reading)
            os.close(writing)
            return None
        if pid == 0:  # the copy: produce, send, and end without running anything of ours
            status = 1
            try:
                os.close(reading)
                data = produce()
                with os.fdopen(writing, "wb") as stream:
                    stream.write(data)
                status = 0
            finally:
                os._exit(status)
        os.close(writing)
        return cls(pid, reading)

    def collect(self) -> bytes | None:
        """The bytes the copy sent, once it has ended well; None if it did not."""
        with os.fdopen(self.reading, "rb") as stream:
            data = stream.read()
        with contextlib.suppress(ChildProcessError):
            _, status = os.waitpid(self.pid, 0)
            if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
                return None
        return data

    def abandon(self) -> None:
        """Ends a copy whose bytes are no longer wanted, and reaps it."""
        with contextlib.suppress(OSError):
            os.close(self.reading)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)

"""A pipe read line by line on a thread of its own, which never holds anyone past a deadline.

A worker's standard output and error are pipes, and whoever holds a pipe's
write end keeps it open: a workload that starts a detached process (a new
session, out of the worker's process group) hands that process the worker's
standard error, and the pipe never reaches end of file even after the worker
is dead. A reader blocked in `read()` would then hold the grade for ever, and
so would closing a buffered file another thread is reading from. So the
reader owns its descriptor outright, waits for data with a short `select`,
and stops when it is told to (after a grace period to drain what is left),
whatever the other end does; it closes the descriptor itself on its way out.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
import time
from collections.abc import Callable

from topos_cli.harness.helper_thread import start_helper

#: How often a waiting reader looks up to see whether it has been told to stop.
_POLL_SECONDS = 0.05

_CHUNK_BYTES = 65536


class PipeReader:
    """Reads `descriptor` to end of file on a daemon thread, calling `on_line` with each line.

    A line longer than `longest_line` bytes is cut there (the rest, up to its
    newline, is dropped), so a writer that never ends a line cannot fill
    memory. `on_line` is called without the line ending; an exception it
    raises is swallowed (a reader must keep the pipe drained).
    """

    def __init__(
        self,
        descriptor: int,
        on_line: Callable[[bytes], None],
        *,
        name: str,
        longest_line: int,
    ) -> None:
        self.descriptor = descriptor
        self.on_line = on_line
        self.longest_line = longest_line
        self._stop_at = float("inf")
        self._ended = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Starts reading (on a thread of a small stack: `helper_thread`)."""
        start_helper(self._thread)

    @property
    def reached_end(self) -> bool:
        """Whether the pipe reached end of file (rather than being abandoned)."""
        return self._ended.is_set()

    def stop(self, grace_seconds: float) -> None:
        """Lets the reader drain for up to `grace_seconds` more, then stops it; returns by then.

        Returns at once if the pipe has already reached end of file.
        """
        self._stop_at = time.monotonic() + grace_seconds
        if self._thread.is_alive():
            # The reader looks at the clock at least every _POLL_SECONDS; a reader stuck in
            # `on_line` (a display that blocks) is abandoned: it is a daemon thread.
            self._thread.join(timeout=grace_seconds + 2 * _POLL_SECONDS)

    def _run(self) -> None:
        pending = b""
        dropping = False  # inside an over-long line, until its newline
        selector = selectors.DefaultSelector()
        try:
            selector.register(self.descriptor, selectors.EVENT_READ)
            while time.monotonic() < self._stop_at:
                if not selector.select(_POLL_SECONDS):
                    continue
                try:
                    chunk = os.read(self.descriptor, _CHUNK_BYTES)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not chunk:
                    self._ended.set()
                    break
                pending += chunk
                while True:
                    newline = pending.find(b"\n")
                    if newline < 0:
                        if len(pending) > self.longest_line:
                            if not dropping:
                                self._deliver(pending[: self.longest_line])
                            dropping, pending = True, b""
                        break
                    line, pending = pending[:newline], pending[newline + 1 :]
                    if not dropping:
                        self._deliver(line[: self.longest_line])
                    dropping = False
            if pending and not dropping:
                self._deliver(pending[: self.longest_line])
        finally:
            selector.close()
            with contextlib.suppress(OSError):
                os.close(self.descriptor)

    def _deliver(self, line: bytes) -> None:
        # A reader that stops reading would stall the worker on a full pipe.
        with contextlib.suppress(Exception):
            self.on_line(line)

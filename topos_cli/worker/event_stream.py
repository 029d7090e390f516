"""The worker's events on a private duplicate of standard output, held while a counting
worker's steps are measured, and whether it has said it is ready."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from topos_cli.worker.protocol import (
    Error,
    Event,
    Ready,
    encode,
)


class EventStream:
    """Writes events as JSON lines to a private duplicate of standard output."""

    def __init__(self) -> None:
        # Events go to a duplicate of fd 1; fd 1 itself then points at stderr, so a
        # stray print() from a workload lands in the captured stderr, not the pipe.
        self._stream: TextIO = os.fdopen(os.dup(1), "w", buffering=1)
        sys.stdout.flush()
        os.dup2(2, 1)

        #: Whether `Ready` was sent: a failure after it is the route's, not a usage error.
        self.ready = False
        self._held: list[Event] | None = None

    def emit(self, event: Event) -> None:
        """Sends one event (or keeps it, while held, to be sent at `release`)."""
        self.ready = self.ready or isinstance(event, Ready)
        if self._held is not None and not isinstance(event, Error):
            self._held.append(event)
            return
        self.release()
        self._stream.write(encode(event))

    def hold(self) -> None:
        """Keeps the events from here on until `release` (or an error) sends them.

        A counting worker says nothing while it counts: an event's text is as long as
        its timings' digits, so writing one between counted steps would leave Python's
        allocator otherwise from run to run, and the next step would count otherwise."""
        self._held = []

    def release(self) -> None:
        """Sends the events kept since `hold`, and holds no more."""
        held, self._held = self._held, None
        for event in held or ():
            self._stream.write(encode(event))

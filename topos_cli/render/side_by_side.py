"""Figures drawn side by side, each but the first in a forked copy of the drawing process.

A grade's report is drawn after its last worker has ended, when both cores are
idle, and its three figures take about 0.45 s one after another. A fork of a
process that has matplotlib loaded starts in a millisecond and shares its
pages, so each figure but the first is drawn in a fork of its own and sent back
over a pipe as text, while this process draws the first. The text is the same
either way (every figure's SVG ids are salted with its name, not counted).

Where a fork is unsafe (another thread running: a fork copies only the calling
thread, and a lock the others held stays locked in the copy) or impossible (not
Linux), or where a fork fails to deliver its figure, the figure is drawn here,
so a drawing failure is raised in this process as it would have been.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from typing import NamedTuple

#: A drawing: makes one figure and returns its text (an SVG element).
Drawing = Callable[[], str]


class _Fork(NamedTuple):
    """A forked drawing: its process and the read end of the pipe its text comes on."""

    pid: int
    reading: int


def draw_side_by_side(drawings: Mapping[str, Drawing]) -> dict[str, str]:
    """The text of every drawing, by name in the order given; drawn at once where a fork
    is safe, else one after another."""
    names = list(drawings)
    if len(names) < 2 or not forking_is_safe():
        return {name: drawings[name]() for name in names}
    forks: dict[str, _Fork | None] = {name: _fork(drawings[name]) for name in names[1:]}
    texts: dict[str, str] = {}
    try:
        texts[names[0]] = drawings[names[0]]()
        for name in names[1:]:
            text = _collect(forks.pop(name))
            texts[name] = drawings[name]() if text is None else text
    finally:
        for fork in forks.values():  # left behind by a failure here: end them
            _abandon(fork)
    return {name: texts[name] for name in names}


def forking_is_safe() -> bool:
    """Whether this process may fork a copy of itself to draw in: Linux, one thread."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


def _fork(drawing: Drawing) -> _Fork | None:
    """Starts `drawing` in a forked copy of this process; None if no fork could start."""
    reading, writing = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(reading)
        os.close(writing)
        return None
    if pid == 0:  # the copy: draw, send, and end without running anything of the parent's
        status = 1
        try:
            os.close(reading)
            data = drawing().encode("utf-8")
            with os.fdopen(writing, "wb") as stream:
                stream.write(data)
            status = 0
        finally:
            os._exit(status)
    os.close(writing)
    return _Fork(pid, reading)


def _collect(fork: _Fork | None) -> str | None:
    """The text a fork sent, once it has ended well; None if it did not."""
    if fork is None:
        return None
    with os.fdopen(fork.reading, "rb") as stream:
        data = stream.read()
    _, status = os.waitpid(fork.pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return None
    return data.decode("utf-8")


def _abandon(fork: _Fork | None) -> None:
    """Ends a fork whose figure is no longer wanted, and reaps it."""
    if fork is None:
        return
    with contextlib.suppress(OSError):
        os.close(fork.reading)
    with contextlib.suppress(ProcessLookupError):
        os.kill(fork.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(fork.pid, 0)

"""Interruption: Ctrl-C, SIGTERM and SIGHUP as one exception, raised, deferred or ignored on demand.

From the first moment of the console script (`defer_from_start`) a signal is
only remembered: importing the command-line framework and parsing the
command line take a good fraction of a second, and an interrupt there would
print a traceback, or be swallowed by the framework. The command delivers
it (`start_raising`) as soon as it can act on it: a grade once it knows
where its (interrupted) result goes, any other command at once.

A grade must end its running worker and write what it has whichever of the
two signals arrives, so both become `Interrupted` (a `KeyboardInterrupt`,
so code that already handles Ctrl-C handles SIGTERM too). Around a spawn the
signal is *deferred* (raised once the child's handle is kept, so it can be
killed), and once the runs are over it is *ignored* (a second Ctrl-C while
partial results are written must not leave half a file or an orphan behind).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

#: The signals that interrupt a grade. SIGHUP (the terminal closed, the ssh link dropped)
#: is handled as SIGTERM: the running worker is ended and the partial result written.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """The grade was interrupted by `signal_name` (SIGINT, SIGTERM or SIGHUP)."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


class _State:
    """What the handler does now: raise, remember the signal for later, or nothing."""

    deferring = False
    pending: str | None = None
    stopped = False


def _handle(number: int, frame: FrameType | None) -> None:
    name = signal.Signals(number).name
    if _State.stopped:
        return
    if _State.deferring:
        _State.pending = _State.pending or name
        return
    raise Interrupted(name)


def _in_main_thread() -> bool:
    # Python lets only the main thread install handlers; elsewhere these are no-ops.
    return threading.current_thread() is threading.main_thread()


def defer_from_start() -> None:
    """Installs the handler for SIGINT and SIGTERM, remembering a signal until `start_raising`.

    For the console script's first line; a signal ignored at start (a
    background job of a script ignores SIGINT) stays ignored.
    """
    if not _in_main_thread():
        return
    _State.deferring, _State.pending, _State.stopped = True, None, False
    for number in SIGNALS:
        if signal.getsignal(number) is not signal.SIG_IGN:
            signal.signal(number, _handle)


def start_raising() -> None:
    """Ends the deferral `defer_from_start` began: a signal remembered is raised now."""
    _State.deferring = False
    pending, _State.pending = _State.pending, None
    if pending is not None:
        raise Interrupted(pending)


@contextlib.contextmanager
def interruptions_raised() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise `Interrupted`; the old handlers return after.

    A signal deferred since start stays pending until `start_raising`.
    """
    if not _in_main_thread():
        yield
        return
    # A signal ignored at start (a background job of a script ignores SIGINT) stays ignored.
    previous = {
        number: signal.signal(number, _handle)
        for number in SIGNALS
        if signal.getsignal(number) is not signal.SIG_IGN
    }
    _State.stopped = False
    try:
        yield
    finally:
        _State.stopped = False
        for number, handler in previous.items():
            signal.signal(number, handler)


def stop_raising() -> None:
    """From now until `interruptions_raised` ends, SIGINT and SIGTERM are ignored.

    A flag rather than a change of handler, so it takes effect in one step:
    code that catches `Interrupted` around this call knows that once it
    returns, no further `Interrupted` can arrive.
    """
    _State.stopped = True


def hold_until_exit() -> None:
    """From now on SIGINT and SIGTERM are only remembered (`pending_signal` says which):
    the command is done, and the process is leaving (`console_script`)."""
    _State.deferring, _State.stopped = True, False
    if _in_main_thread():
        for number in SIGNALS:
            if signal.getsignal(number) is not signal.SIG_IGN:
                signal.signal(number, _handle)


def pending_signal() -> str | None:
    """The signal remembered since `hold_until_exit` (or a deferral), if one arrived."""
    return _State.pending


@contextlib.contextmanager
def interruptions_deferred() -> Iterator[None]:
    """Within the block a signal is remembered, and raised as `Interrupted` when it ends."""
    _State.deferring, _State.pending = True, None
    try:
        yield
    finally:
        start_raising()


@contextlib.contextmanager
def interruptions_ignored() -> Iterator[None]:
    """Within the block SIGINT and SIGTERM are ignored; the old handlers return after."""
    if not _in_main_thread():
        yield
        return
    previous = {number: signal.signal(number, signal.SIG_IGN) for number in SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)

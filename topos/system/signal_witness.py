"""Whether a signal was sent: a `KeyboardInterrupt` is raised by Ctrl-C, SIGTERM (as
topos's command handles it) — or by any code that writes `raise KeyboardInterrupt`.

A workload's module that raises one as it is imported is a broken workload, not an
interrupted grade; only a signal that actually arrived may be reported as one. While
`witnessed_signals` is open, each interrupting signal whose handler is Python's (the only
kind that can raise) is noted as it arrives, then handled by that handler as before.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

#: The signals that interrupt a command (as `topos_cli.shared.interruption` lists them).
WITNESSED = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextlib.contextmanager
def witnessed_signals() -> Iterator[Callable[[], bool]]:
    """Yields a function that says whether one of `WITNESSED` arrived while inside.
    Off the main thread no handler can be set, so every interrupt counts as a signal."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: True
        return
    arrived: list[int] = []
    # Only a handler written in Python can raise: a signal left to its default action (or
    # ignored) never becomes an exception, and is left as it is, as fast as it was.
    previous = {
        number: handler for number in WITNESSED if callable(handler := signal.getsignal(number))
    }

    def witness(number: int, frame: FrameType | None) -> None:
        arrived.append(number)
        previous[number](number, frame)

    for number in previous:
        signal.signal(number, witness)
    try:
        yield lambda: bool(arrived)
    finally:
        for number, handler in previous.items():
            if signal.getsignal(number) is witness:
                signal.signal(number, handler)

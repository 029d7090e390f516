"""Whether a signal was sent: a `KeyboardInterrupt` is raised by Ctrl-C, SIGTERM (as
topos's command handles it) — or by any code that writes `raise KeyboardInterrupt`.

A workload's module that raises one as it is imported is a broken workload, not an
interrupted grade; only a signal that actually arrived may be reported as one. While
`witnessed_signals` is open, each interrupting signal that arrives is noted, then
handled exactly as the handler in place would have handled it.
"""

from __future__ import annotations

import contextlib
import os
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
    previous = {number: signal.getsignal(number) for number in WITNESSED}

    def witness(number: int, frame: FrameType | None) -> None:
        arrived.append(number)
        handler = previous[number]
        if callable(handler):
            handler(number, frame)
        elif handler != signal.SIG_IGN:
            # The default action (or one set outside Python): taken as it would have been.
            signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)

    for number in WITNESSED:
        signal.signal(number, witness)
    try:
        yield lambda: bool(arrived)
    finally:
        for number, handler in previous.items():
            if signal.getsignal(number) is witness:
                signal.signal(number, handler if handler is not None else signal.SIG_DFL)

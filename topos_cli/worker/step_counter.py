"""StepCounter: the worker's half of counting the work a step executes under Valgrind.

The grader runs a counting worker under `valgrind --tool=callgrind --instr-atstart=no`,
so nothing is counted (and start-up runs at a fraction of callgrind's cost) until the
worker asks. Around each measured step the worker asks callgrind, through its client
requests, to zero its counters and then to dump them under the step's label; the grader
reads one dump per step (`harness.instruction_counting`). Imports, data loading,
lowering and warm-up are never counted, whatever they cost.

Client requests are a magic instruction sequence that only a compiled caller can issue;
the grader builds a small shared library of them once (`harness.client_requests`) and
names it in `CLIENT_REQUESTS_VARIABLE`. Without that variable, or outside Valgrind, the
counter is `None` and the worker runs as it always does.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys

#: Where the grader puts the path of the client-request library for a counting worker.
CLIENT_REQUESTS_VARIABLE = "TOPOS_CLIENT_REQUESTS"

#: The label of a measured step's dump; the grader reads the step back from it.
STEP_LABEL = "topos step {step}"


class StepCounter:
    """Zeroes callgrind's counters before a measured step and dumps them after it."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self._library = library
        self._library.topos_dump_stats_at.argtypes = [ctypes.c_char_p]
        self._instrumenting = False

    @classmethod
    def from_environment(cls) -> StepCounter | None:
        """The counter the grader asked for, or `None` when it asked for none or this
        process is not running under Valgrind (a counting worker run by hand)."""
        path = os.environ.get(CLIENT_REQUESTS_VARIABLE)
        if not path:
            return None
        library = ctypes.CDLL(path)
        if not library.topos_running_on_valgrind():
            return None
        return cls(library)

    def begin(self) -> None:
        """Before a measured step: instrument from here on, and count from zero.

        The cyclic garbage collector is held off while the step runs (and run before it,
        uncounted): when it runs depends on how many objects were allocated since it
        last ran, not on the step, so counting it would make equal steps count
        differently (by 1% on a step of two million instructions)."""
        if not self._instrumenting:
            # Instrumenting starts once: it throws away every translation made so far.
            self._library.topos_start_instrumentation()
            self._instrumenting = True
        gc.collect()
        gc.disable()
        # CPython's type attribute cache is indexed by the addresses of the names looked
        # up, so what it holds after start-up follows whatever was allocated before (a
        # timing's digits, a read of /proc): emptied, every step starts it alike.
        sys._clear_type_cache()
        self._library.topos_zero_stats()

    def end(self, step: int) -> None:
        """After a measured step: its counts, dumped under its label."""
        self._library.topos_dump_stats_at(STEP_LABEL.format(step=step).encode())
        gc.enable()

    def finish(self) -> None:
        """After the last measured step: nothing more is counted."""
        if self._instrumenting:
            self._library.topos_stop_instrumentation()
            self._instrumenting = False

"""Running a grade's planned workers: one at a time, two loading at once, until the last,
an interrupt, or a usage error; what they gathered is a `GatheredRepeats`.

Ctrl-C and SIGTERM end the running worker; the runs gathered so far are kept so the
caller can judge and write a partial result.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from topos_cli.harness.grade_preparation import PreparedGrade
from topos_cli.harness.monitor import WorkerMonitor
from topos_cli.harness.progress import LiveProgress, PlainProgress
from topos_cli.harness.worker_observer import WorkerObserver
from topos_cli.harness.worker_request import WorkerRequest
from topos_cli.result.instruction_counts import RouteCounts
from topos_cli.result.repeat import Repeat
from topos_cli.shared.interruption import start_raising, stop_raising
from topos_cli.shared.output_stream import use_plain_output


@dataclass
class GatheredRepeats:
    """What a grade gathered: the runs, and how the grade itself ended."""

    results: list[Repeat] = field(default_factory=list)
    interrupted_by: str | None = None
    usage_error: str | None = None
    #: Each route's counted steps (`grade --measure instructions`), after the timed runs.
    counts: list[RouteCounts] = field(default_factory=list)
    #: With `--repeat auto`: why the repeats stopped, in words (`None`: a fixed number).
    repeat_stop: str | None = None


def usage_error_of(result: Repeat, workload: str) -> str | None:
    """The one-line usage or data error a run reported before it was ready, if any."""
    error = result.facts.error
    if result.status != "failed" or error is None or result.facts.ready is not None:
        return None
    if error.kind not in ("data", "workload"):
        return None
    message = error.message or error.type or "error"
    if error.type in ("ShapeError", "GraphError"):
        where = error.where
        message = f"workload {workload!r} failed to record: {message}" + (
            f" (at {where})" if where else ""
        )
    return message


def count_gathered(preparation: PreparedGrade, gathered: GatheredRepeats) -> list[RouteCounts]:
    """Each route's counts, for the routes that completed a timed run (a route that
    failed its runs would fail its count too, only slower)."""
    from topos_cli.harness.instruction_counting import count_routes

    completed = {run.route for run in gathered.results if run.status == "ok"}
    requests = [request for request in preparation.requests if request.label in completed]
    sys.stderr.write(
        f"counting instructions of {len(dict.fromkeys(r.label for r in requests))} routes "
        "under callgrind, two at a time (some 15 s a route for mnist, a minute or more for "
        "cifar10)...\n"
    )
    sys.stderr.flush()
    return count_routes(requests, preparation.environment)


def choose_display(preparation: PreparedGrade) -> PlainProgress | LiveProgress:
    """A live display on a terminal (and without NO_COLOR), plain lines on stderr otherwise."""
    repeats = preparation.options.repeat
    live = not use_plain_output(sys.stdout) and not use_plain_output(sys.stderr)
    if live:
        return LiveProgress(sys.stderr, preparation.requests, repeats)
    return PlainProgress(sys.stderr, preparation.requests, repeats)


#: What a caller may make of each run before it is kept: the run (perhaps relabelled),
#: or None to set it aside.
Admission = Callable[[Repeat, Any], "Repeat | None"]
#: What a caller adds once every planned run has run (`--repeat auto`): further runs, or
#: none to stop.
Continuation = Callable[[GatheredRepeats], Sequence[WorkerRequest]]


def run_routes(
    preparation: PreparedGrade,
    display: WorkerObserver | None = None,
    admit: Admission | None = None,
    before_turn: Callable[[], None] | None = None,
    more: Continuation | None = None,
) -> GatheredRepeats:
    """Runs every planned request, one at a time; stops at an interrupt or a usage error.
    `admit(run, request)` may relabel a run or set it aside (the frontier does both);
    `before_turn()` is called before each worker warms up and trains; `more(record)`,
    once the planned runs are done, may plan more: they join `preparation.requests` (so the
    result's order and an interruption's runs not run name them) and run in turn."""
    gathered = GatheredRepeats()
    display = display if display is not None else choose_display(preparation)
    current: WorkerMonitor | None = None
    following: WorkerMonitor | None = None
    requests = preparation.requests
    try:
        try:
            # An interrupt deferred since the command began lands here, with a result to write.
            start_raising()
            with display:  # type: ignore[attr-defined]
                index = -1
                while True:
                    index += 1
                    if index == len(requests):
                        added = list(more(gathered)) if more is not None else []
                        if not added:
                            break
                        requests.extend(added)
                        planned = getattr(display, "planned", None)
                        if planned is not None:
                            planned(added)
                    request = requests[index]
                    if following is not None:
                        current, following, beside = following, None, None
                    else:
                        # Two workers load at once (interpreter, imports, data, lowering:
                        # nothing measured), then warm up and train one at a time.
                        # (A worker of an older checkout that cannot hold loads alone.)
                        current = WorkerMonitor(
                            request, preparation.environment, display, hold=request.holds
                        )
                        current.start()
                        if index + 1 < len(requests) and request.holds:
                            upcoming = requests[index + 1]
                            if upcoming.holds:
                                following = WorkerMonitor(
                                    upcoming, preparation.environment, display, hold=True
                                )
                                following.start()
                        beside = following
                    result = current.supervise(beside, before_turn)
                    if admit is not None:
                        result = admit(result, request)
                        if result is None:
                            continue
                    gathered.results.append(result)
                    gathered.usage_error = usage_error_of(result, preparation.options.workload)
                    if gathered.usage_error is not None:
                        break
            if "instructions" in preparation.options.measure and gathered.usage_error is None:
                # After every timed run (and the display), so no timed step shares the
                # cores with a counting worker.
                gathered.counts = count_gathered(preparation, gathered)
        finally:
            # A worker started and never run (the next of a pair, or one whose start was
            # interrupted) ends here, with no record.
            for monitor in (current, following):
                if monitor is not None:
                    monitor.abandon()
            # From here on a signal is ignored: what was gathered is judged and written.
            stop_raising()
    except KeyboardInterrupt as error:  # Interrupted (SIGINT or SIGTERM) is one
        gathered.interrupted_by = getattr(error, "signal_name", "SIGINT")
        kept = current is not None and current.result is not None
        if kept and not any(result is current.result for result in gathered.results):
            result = current.result if admit is None else admit(current.result, current.request)
            if result is not None and not any(run is result for run in gathered.results):
                gathered.results.append(result)
    return gathered

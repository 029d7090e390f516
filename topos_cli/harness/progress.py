"""What a grade shows while its routes run: a rich live display, or plain progress lines.

`LiveProgress` draws one bar per run (route and repeat) with its step count,
time per step, ETA and current RSS, on a terminal. `PlainProgress` writes a
few lines per run to a stream (standard error) for logs and pipes: started,
ready, every tenth of the steps (at most one line every two seconds), and how
it ended. Both are `WorkerObserver`s; the monitor calls them from its
threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TextIO

from topos_cli.harness.worker_observer import WorkerObserver
from topos_cli.harness.worker_request import WorkerRequest
from topos_cli.result.repeat import Repeat
from topos_cli.shared.units import format_bytes, format_duration
from topos_cli.worker import protocol

#: The live display redraws the RSS at most this often (the sampler runs far faster).
_RSS_REFRESH_SECONDS = 0.1

#: Plain progress reports every tenth of the steps, but no more often than this.
_PLAIN_LINE_SECONDS = 2.0


def run_label(request: WorkerRequest, repeats: int) -> str:
    """`engine`, or `engine #2` when each route runs more than once; a frontier's remat
    point by its budget (`remat@50%`), or by every budget of its plan."""
    name = request.label
    if request.point is not None:
        name = request.point
    elif request.route == "remat" and request.budget is not None:
        name = f"remat@{request.budget}"
    return name if repeats <= 1 else f"{name} #{request.repeat + 1}"


def outcome_phrase(result: Repeat) -> str:
    """How a run ended, in a few words: `ok, peak 261.3 MiB` or its detail's first line."""
    if result.status == "ok":
        return f"ok, peak {format_bytes(result.peak_rss_bytes)}"
    detail = (result.detail or "").splitlines()
    if detail and detail[0].startswith(result.status):
        return detail[0]  # "timed out after 1.5 s ...", not "timed out: timed out after ..."
    return result.status + (f": {detail[0]}" if detail else "")


class _RunState:
    """What a display knows of one run so far."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.training_started: float | None = None
        self.steps_done = 0
        self.step_seconds = 0.0
        self.rss_bytes: int | None = None
        self.rss_drawn = 0.0
        self.line_written = self.started

    def milliseconds_per_step(self) -> float | None:
        return None if not self.steps_done else self.step_seconds * 1000.0 / self.steps_done

    def remaining_seconds(self, steps: int) -> float | None:
        if not self.steps_done:
            return None
        return (steps - self.steps_done) * self.step_seconds / self.steps_done


class PlainProgress(WorkerObserver):
    """Progress as plain lines on `stream`: no colour, no cursor movement, a few lines a run."""

    def __init__(self, stream: TextIO, requests: Sequence[WorkerRequest], repeats: int) -> None:
        self.stream = stream
        self.total = len(requests)
        self.repeats = repeats
        self._positions = {request: index + 1 for index, request in enumerate(requests)}
        self._states: dict[WorkerRequest, _RunState] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> PlainProgress:
        return self

    def planned(self, requests: Sequence[WorkerRequest]) -> None:
        """Numbers the runs added after the first ones (`--repeat auto`)."""
        for request in requests:
            self.total += 1
            self._positions[request] = self.total

    def __exit__(self, *exception: object) -> None:
        pass

    def _line(self, request: WorkerRequest, text: str) -> None:
        position = self._positions.get(request, 0)
        with self._lock:
            self.stream.write(
                f"[{position}/{self.total}] {run_label(request, self.repeats)}: {text}\n"
            )
            self.stream.flush()

    def started(self, request: WorkerRequest, pid: int) -> None:
        """Says the run started, with its process id."""
        self._states[request] = _RunState()
        self._line(request, f"started (worker {pid})")

    def event(self, request: WorkerRequest, event: protocol.Event) -> None:
        """Says when the worker is ready, and how far it got every tenth of the steps."""
        state = self._states.setdefault(request, _RunState())
        if isinstance(event, protocol.Ready):
            state.training_started = time.monotonic()
            live_volume = event.facts.live_volume
            volume = None if live_volume is None else live_volume.peak_bytes
            lowering = event.facts.lower_seconds
            # The plan's lowering said apart: a remat route's can be most of its start.
            lowered = "" if lowering is None else f"lowering {format_duration(lowering)}, "
            planning = event.facts.planning_seconds
            if lowering is not None and planning is not None:
                # Remat's search ran before the workers: where its seconds went.
                lowered = (
                    f"lowering {format_duration(lowering)} (its search "
                    f"{format_duration(planning)} in the planning child), "
                )
            # A native route (a PyTorch or JAX step) has no plan to predict memory from, nor
            # has a peer (its framework plans its own memory): nothing to say, not a '?'.
            predicted = (
                ""
                if event.facts.native is not None or volume is None
                else f", predicted live volume {format_bytes(volume)}"
            )
            self._line(
                request,
                f"ready after {format_duration(state.training_started - state.started)} "
                f"({lowered}RSS {format_bytes(event.facts.ready_rss_bytes)}{predicted})",
            )
        elif isinstance(event, protocol.Step):
            state.steps_done += 1
            state.step_seconds += event.seconds
            every = max(1, request.steps // 10)
            now = time.monotonic()
            due = now - state.line_written >= _PLAIN_LINE_SECONDS
            if due and state.steps_done % every == 0 and state.steps_done < request.steps:
                state.line_written = now
                milliseconds = state.milliseconds_per_step() or 0.0
                self._line(
                    request,
                    f"step {state.steps_done}/{request.steps}, {milliseconds:.1f} ms/step, "
                    f"ETA {format_duration(state.remaining_seconds(request.steps))}, "
                    f"RSS {format_bytes(state.rss_bytes)}",
                )

    def sampled(self, request: WorkerRequest, rss_bytes: int) -> None:
        """Keeps the latest RSS for the next progress line."""
        state = self._states.get(request)
        if state is not None:
            state.rss_bytes = rss_bytes

    def finished(self, request: WorkerRequest, result: Repeat) -> None:
        """Says how the run ended."""
        state = self._states.get(request) or _RunState()
        elapsed = time.monotonic() - state.started
        steps = len(result.loss_bits)
        self._line(
            request,
            f"{outcome_phrase(result)} ({steps}/{request.steps} steps in "
            f"{format_duration(elapsed)})",
        )


class LiveProgress(WorkerObserver):
    """A rich live display: one bar per run, with step count, ms/step, ETA and RSS."""

    def __init__(self, stream: TextIO, requests: Sequence[WorkerRequest], repeats: int) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.repeats = repeats
        self._states: dict[WorkerRequest, _RunState] = {}
        self._progress = Progress(
            TextColumn("{task.description}", style="bold"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[speed]}"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[rss]}"),
            TextColumn("{task.fields[status]}"),
            console=Console(file=stream),
            refresh_per_second=8,
        )
        self._tasks = {
            request: self._progress.add_task(
                run_label(request, repeats),
                total=request.steps,
                start=False,
                speed="",
                rss="",
                status="waiting",
            )
            for request in requests
        }

    def planned(self, requests: Sequence[WorkerRequest]) -> None:
        """A bar for each run added after the first ones (`--repeat auto`)."""
        self.repeats = max(self.repeats, 2)
        for request in requests:
            self._tasks[request] = self._progress.add_task(
                run_label(request, self.repeats),
                total=request.steps,
                start=False,
                speed="",
                rss="",
                status="waiting",
            )

    def __enter__(self) -> LiveProgress:
        self._progress.start()
        return self

    def __exit__(self, *exception: object) -> None:
        self._progress.stop()

    def started(self, request: WorkerRequest, pid: int) -> None:
        """Marks the run as loading."""
        self._states[request] = _RunState()
        self._progress.update(self._tasks[request], status=f"loading (pid {pid})")

    def event(self, request: WorkerRequest, event: protocol.Event) -> None:
        """Starts the bar at ready and advances it a step at a time."""
        state = self._states.setdefault(request, _RunState())
        task = self._tasks[request]
        if isinstance(event, protocol.Ready):
            self._progress.start_task(task)
            self._progress.update(task, status="training")
        elif isinstance(event, protocol.Step):
            state.steps_done += 1
            state.step_seconds += event.seconds
            milliseconds = state.milliseconds_per_step()
            self._progress.update(
                task,
                completed=state.steps_done,
                speed="" if milliseconds is None else f"{milliseconds:.1f} ms/step",
            )

    def sampled(self, request: WorkerRequest, rss_bytes: int) -> None:
        """Shows the current RSS, at most ten times a second."""
        state = self._states.get(request)
        if state is None:
            return
        now = time.monotonic()
        if now - state.rss_drawn >= _RSS_REFRESH_SECONDS:
            state.rss_drawn = now
            self._progress.update(self._tasks[request], rss=format_bytes(rss_bytes))

    def finished(self, request: WorkerRequest, result: Repeat) -> None:
        """Shows how the run ended."""
        task = self._tasks[request]
        status = outcome_phrase(result)
        style = "green" if result.status == "ok" else "red"
        self._progress.update(task, status=f"[{style}]{_escape(status)}[/{style}]")
        self._progress.stop_task(task)


def _escape(text: str) -> str:
    """`text` with rich's markup brackets escaped, so a message cannot restyle the display."""
    from rich.markup import escape

    return escape(text)

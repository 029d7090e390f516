"""The part of every route's worker after it is ready: warm-up steps thrown away, the
wait for its turn, the measured steps (one `step` event each) and the `done` event."""

from __future__ import annotations

import math
import sys
import time
from typing import Any

from topos.system import process_memory
from topos_cli.worker import sampled_memory
from topos_cli.worker.event_stream import EventStream
from topos_cli.worker.protocol import (
    EXIT_NONFINITE,
    GO_LINE,
    Done,
    Loaded,
    Nonfinite,
    Step,
    WorkerCommand,
)
from topos_cli.worker.route_clock import RouteClock
from topos_cli.worker.step_counter import StepCounter
from topos_cli.worker.step_peak import StepPeak


def warm_up(training: Any, steps: int) -> list[float]:
    """Runs `steps` warm-up steps, each thrown away (parameters and batch order untouched,
    see `Training.warm_up`); returns each one's seconds. The steps that follow are
    measured warm, as hyperfine's `--warmup` does for commands."""
    times = []
    for _ in range(steps):
        began = time.perf_counter()
        training.warm_up()
        times.append(time.perf_counter() - began)
    return times


def wait_for_turn(events: EventStream) -> float | None:
    """Says `loaded`, then waits for the grader's `go` line on standard input; returns the
    seconds waited, or None when standard input ends first (the grader has no turn for
    this worker). Everything measured (warm-up, memory, steps) comes after the wait, so
    another worker loading meanwhile touches none of it."""
    events.emit(Loaded())
    began = time.perf_counter()
    line = sys.stdin.buffer.readline()
    return time.perf_counter() - began if line == GO_LINE else None


def train_steps(
    arguments: WorkerCommand,
    events: EventStream,
    training: Any,
    step_peak: StepPeak,
    started: float,
) -> int:
    """The measured steps, one `step` event each, then `done`."""
    program = training.program
    # CPU time beside wall time: a step its own CPU cannot explain waited for a processor.
    clock = RouteClock(lambda: program.shard_process_ids)
    shard_switches = clock.shard_switches()
    # Under `grade --measure instructions` the grader runs this worker under Valgrind
    # and reads the work of each measured step from callgrind (`step_counter`).
    counter = StepCounter.from_environment()
    for step in range(arguments.steps):
        clock.start()
        began = time.perf_counter()
        if counter is not None:  # the step alone, not the clock's reading of /proc
            counter.begin()
        loss = training.step(step)
        if counter is not None:
            counter.end(step)
        seconds = time.perf_counter() - began
        cpu_seconds, switches = clock.step()
        value = float(loss)
        finite = math.isfinite(value)
        bits = int(loss.view("uint32"))
        events.emit(
            Step(step, value if finite else str(value), bits, seconds, cpu_seconds, switches)
        )
        if not finite:
            events.emit(Nonfinite(step, str(value)))
            events.emit(done_event("nonfinite", started, step_peak, program, clock, shard_switches))
            return EXIT_NONFINITE
    if counter is not None:
        counter.finish()
        events.release()
    events.emit(done_event("ok", started, step_peak, program, clock, shard_switches))
    return 0


def done_event(
    status: str,
    started: float,
    step_peak: StepPeak,
    program: Any,
    clock: RouteClock | None = None,
    shard_switches: int | None = None,
) -> Done:
    """The `done` event: training time, and the memory at the end (the peak is the larger
    of VmHWM and VmRSS read at each step's peak, see `step_peak`, plus with shard
    processes each child's largest private memory, read at the end of its computations)."""
    training_seconds = time.perf_counter() - started
    high_water = process_memory.high_water_bytes()
    readings = [value for value in (high_water, step_peak.bytes) if value is not None]
    children = program.shard_process_memory()
    children_peak = sum(peak for _, peak in children)
    if high_water is not None:
        peak = max(readings) + children_peak
    else:  # no /proc: sampled, not exact (the harness marks the run's peak `sampling`)
        sampled = sampled_memory.sampled_peak(
            step_peak.bytes, step_peak.max_at_ready, sampled_memory.max_resident_bytes()
        )
        peak = None if sampled is None else sampled + children_peak
    switches_now = None if clock is None or shard_switches is None else clock.shard_switches()
    return Done(
        status,
        training_seconds=training_seconds,
        peak_rss_bytes=peak,
        end_rss_bytes=sampled_memory.resident_bytes(),
        high_water_bytes=high_water,
        step_peak_rss_bytes=step_peak.bytes,
        shard_processes_peak_private_bytes=[peak for _, peak in children] or None,
        shard_involuntary_switches=None
        if switches_now is None or shard_switches is None
        else max(switches_now - shard_switches, 0),
    )

"""The worker's protocol: its command line, and the typed events it sends the grader.

`python -m topos_cli.worker --workload W --route R --steps N [--data DIR] [--budget B]
[--warmup N] [--hold] [--remat-schedule FILE]`
trains one route and writes one JSON object per line to the pipe it was given as
standard output: with `--hold`, `loaded` once its data is loaded and its plan lowered,
after which it waits for a `go` line on standard input (so the grader can load two
workers at once and still measure each alone); then `ready` (what the worker loaded
and lowered, the time of its
thrown-away warm-up step, its RSS at ready), one `step` per step (loss, float32
bits, seconds), then `done` (the peak), or `nonfinite` then `done` when a loss
stops being finite, or `error` (one line) and a non-zero exit. Each event is a
record here; `encode` writes one and `decode` reads one back, so the worker and
the monitor cannot disagree on a field.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

from topos_cli.result.result_part import Bytes, Count, ResultPart, Seconds
from topos_cli.result.worker_facts import ErrorFacts, NonfiniteFacts, ReadyFacts

#: The module the grader runs as a worker (`python -m`).
WORKER_MODULE = "topos_cli.worker"

#: Where the worker finds the grader's process id, to die with it (`worker.die_with_parent`).
GRADER_PID_VARIABLE = "TOPOS_GRADER_PID"

#: Warm-up steps a worker runs, and throws away, unless told otherwise (`--warmup`).
DEFAULT_WARMUP_STEPS = 1

#: The worker's exit statuses besides 0: any failure, and a loss that stopped being finite.
EXIT_ERROR = 1
EXIT_NONFINITE = 5


@dataclass(frozen=True)
class WorkerCommand:
    """What one worker is asked to train: its command line as a record."""

    workload: str
    route: str
    steps: int
    #: A directory of real data files, or `None` for the synthetic stand-in.
    data: str | None = None
    #: The remat route's budget as `--budget` takes it (`50%`, `64MiB`, `floor`), or
    #: `None` for the library's default.
    budget: str | None = None
    #: Whether the worker waits, once loaded, for the grader's `go` on standard input.
    hold: bool = False
    #: Warm-up steps run and thrown away before the measured steps (0: none).
    warmup: int = DEFAULT_WARMUP_STEPS
    #: A file holding the schedule a lowering of remat under `budget` chose, before any
    #: worker (`harness.lowered_schedules`): the worker rebuilds that plan rather than
    #: searching for it again. `None`: the worker's own lowering searches.
    remat_schedule: str | None = None

    def arguments(self) -> list[str]:
        """The arguments after the interpreter: `-m topos_cli.worker --workload ...`."""
        arguments = ["-m", WORKER_MODULE, "--workload", self.workload, "--route", self.route]
        arguments += ["--steps", str(self.steps)]
        if self.data is not None:
            arguments += ["--data", self.data]
        if self.budget is not None:
            arguments += ["--budget", self.budget]
        # Said only when it is not the default, so a worker of an older checkout (which
        # knows no --warmup, and warms up once) can run the default (`grade --against`).
        if self.warmup != DEFAULT_WARMUP_STEPS:
            arguments += ["--warmup", str(self.warmup)]
        if self.hold:
            arguments.append("--hold")
        if self.remat_schedule is not None:
            arguments += ["--remat-schedule", self.remat_schedule]
        return arguments

    @classmethod
    def parse(cls, argv: Sequence[str]) -> WorkerCommand:
        """Reads the worker's command line (the grader builds it; people need not)."""
        parser = argparse.ArgumentParser(prog=f"python -m {WORKER_MODULE}")
        parser.add_argument("--workload", required=True)
        parser.add_argument("--route", required=True)
        parser.add_argument("--steps", type=int, required=True)
        parser.add_argument("--data", default=None)
        parser.add_argument("--budget", default=None)
        parser.add_argument("--hold", action="store_true")
        parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP_STEPS)
        parser.add_argument("--remat-schedule", default=None)
        parsed = parser.parse_args(list(argv))
        return cls(
            parsed.workload,
            parsed.route,
            parsed.steps,
            parsed.data,
            parsed.budget,
            parsed.hold,
            max(0, parsed.warmup),
            parsed.remat_schedule,
        )


class _Event(ResultPart, tag_field="event", kw_only=False, frozen=True):
    """What every event shares: its name on the wire (`event`), then its fields."""

    @property
    def name(self) -> str:
        """The event's name on the wire."""
        return type(self).__struct_config__.tag


class Loaded(_Event, tag="loaded", frozen=True):
    """A held worker has loaded its data and lowered its plan, and now waits for `go`."""


#: The line a held worker waits for on standard input before it warms up and trains.
GO_LINE = b"go\n"


class Ready(_Event, tag="ready", frozen=True):
    """The worker has loaded its data, lowered its plan and run a warm-up step: `facts`
    is all it said (`ReadyFacts`), kept whole in the result."""

    facts: ReadyFacts = ReadyFacts()

    def to_json(self) -> dict[str, Any]:
        """The event as its JSON object: its name, then the facts' fields (flat)."""
        # The wire protocol's shape, not the result's: the facts sit flat beside the tag.
        return {"event": self.name, **self.facts.to_json()}


class Step(_Event, tag="step", frozen=True):
    """One training step: its loss (a string when not finite), float32 bits and time;
    the route's CPU seconds in it and the worker's involuntary context switches (see
    `route_clock`; `None` where unknown, and absent from an older worker's events)."""

    step: Count
    loss: float | str | None
    bits: Annotated[int, msgspec.Meta(ge=0, le=0xFFFF_FFFF)]
    seconds: Seconds
    cpu_seconds: Seconds | None = None
    involuntary_switches: Count | None = None


class Nonfinite(_Event, tag="nonfinite", frozen=True):
    """The loss became NaN or infinite at `step`; training stopped there."""

    step: Count
    loss: str

    def facts(self) -> NonfiniteFacts:
        """What the result keeps of it."""
        return NonfiniteFacts(step=self.step, loss=self.loss)


class Done(_Event, tag="done", frozen=True):
    """Training ended (`status` is ok or nonfinite): its time, and the memory at the end."""

    status: str
    training_seconds: Seconds | None = None
    #: The peak since ready: the larger of VmHWM (see `process_memory`) and VmRSS read
    #: at each step's peak (see `step_peak`), or `None` where neither can be read.
    peak_rss_bytes: Bytes | None = None
    end_rss_bytes: Bytes | None = None
    #: The two readings the peak is the larger of.
    high_water_bytes: Bytes | None = None
    step_peak_rss_bytes: Bytes | None = None
    #: With shard processes: each child's largest private memory (USS) read since ready,
    #: in shard order (already added into `peak_rss_bytes`).
    shard_processes_peak_private_bytes: list[Bytes] | None = None
    #: The shard processes' involuntary context switches over the steps (None if unknown).
    shard_involuntary_switches: Count | None = None


class Error(_Event, tag="error", frozen=True):
    """What stopped the worker, in one line: `kind` is data, workload or crash."""

    kind: str
    type: str
    message: str
    #: The innermost frame outside topos: the user's offending expression, or empty.
    where: str = ""

    def details(self) -> ErrorFacts:
        """The error as the result keeps it."""
        return ErrorFacts(kind=self.kind, type=self.type, message=self.message, where=self.where)


Event = Loaded | Ready | Step | Nonfinite | Done | Error


def encode(event: Event) -> str:
    """One event as its JSON line, newline included."""
    return json.dumps(event.to_json()) + "\n"


def decode(line: str | bytes) -> Event | None:
    """The event on `line`, or `None` for anything that is not one (kept as a clue): a
    malformed event ends nothing and corrupts nothing, it is stray output."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        if data.get("event") == "ready":
            facts = {key: value for key, value in data.items() if key != "event"}
            return Ready(ReadyFacts.from_json(facts))
        return msgspec.convert(data, Event)
    except (msgspec.ValidationError, RecursionError):
        return None

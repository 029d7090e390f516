"""The worker's protocol: its command line, and the typed events it sends the grader.

`python -m topos_cli.worker --workload W --route R --steps N [--data DIR] [--budget B]
[--warmup N] [--hold]`
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
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

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
        parsed = parser.parse_args(list(argv))
        return cls(
            parsed.workload,
            parsed.route,
            parsed.steps,
            parsed.data,
            parsed.budget,
            parsed.hold,
            max(0, parsed.warmup),
        )


class _Event:
    """What every event shares: its name on the wire, and its fields as its JSON."""

    name: ClassVar[str]

    def to_json(self) -> dict[str, Any]:
        """The event as its JSON object: its name, then its fields in order."""
        return {"event": self.name, **asdict(self)}


@dataclass(frozen=True)
class Loaded(_Event):
    """A held worker has loaded its data and lowered its plan, and now waits for `go`."""

    name: ClassVar[str] = "loaded"


#: The line a held worker waits for on standard input before it warms up and trains.
GO_LINE = b"go\n"


@dataclass(frozen=True)
class Ready(_Event):
    """The worker has loaded its data, lowered its plan and run a warm-up step.

    `facts` is all it said (plan summary, live volume, dataset, numerics, ...),
    kept whole in the result; the properties are what the grader reads of it.
    """

    facts: Mapping[str, Any] = field(default_factory=dict)
    name: ClassVar[str] = "ready"

    @property
    def ready_rss_bytes(self) -> int | None:
        """VmRSS at ready, when the worker could read it."""
        value = self.facts.get("ready_rss_bytes")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def warm_up_seconds(self) -> float | None:
        """The time of the thrown-away warm-up step: the run's first step."""
        value = self.facts.get("warm_up_seconds")
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return float(value) if number and math.isfinite(value) and value >= 0 else None

    @property
    def shard_process_ids(self) -> list[int]:
        """The worker's shard processes (empty when its shards run on threads)."""
        processes = self.facts.get("shard_processes")
        pids = processes.get("pids") if isinstance(processes, Mapping) else None
        if not isinstance(pids, list):
            return []
        return [pid for pid in pids if isinstance(pid, int) and not isinstance(pid, bool)]

    @property
    def reads_high_water(self) -> bool:
        """Whether the worker reset and will read the kernel's high-water mark (`/proc`)."""
        return self.facts.get("high_water_source") == "proc"

    def to_json(self) -> dict[str, Any]:
        """The event as its JSON object."""
        return {"event": self.name, **self.facts}


@dataclass(frozen=True)
class Step(_Event):
    """One training step: its loss (a string when not finite), float32 bits and time."""

    step: int
    loss: float | str
    bits: int
    seconds: float
    name: ClassVar[str] = "step"


@dataclass(frozen=True)
class Nonfinite(_Event):
    """The loss became NaN or infinite at `step`; training stopped there."""

    step: int
    loss: str
    name: ClassVar[str] = "nonfinite"


@dataclass(frozen=True)
class Done(_Event):
    """Training ended (`status` is ok or nonfinite): its time, and the memory at the end."""

    status: str
    training_seconds: float | None = None
    #: The peak since ready: the larger of VmHWM (see `process_memory`) and VmRSS read
    #: at each step's peak (see `step_peak`), or `None` where neither can be read.
    peak_rss_bytes: int | None = None
    end_rss_bytes: int | None = None
    #: The two readings the peak is the larger of.
    high_water_bytes: int | None = None
    step_peak_rss_bytes: int | None = None
    #: With shard processes: each child's largest private memory (USS) read since ready,
    #: in shard order (already added into `peak_rss_bytes`).
    shard_processes_peak_private_bytes: list[int] | None = None
    name: ClassVar[str] = "done"


@dataclass(frozen=True)
class Error(_Event):
    """What stopped the worker, in one line: `kind` is data, workload or crash."""

    kind: str
    type: str
    message: str
    #: The innermost frame outside topos: the user's offending expression, or empty.
    where: str = ""
    name: ClassVar[str] = "error"

    def details(self) -> dict[str, Any]:
        """The error's fields without the event's name, as the result keeps them."""
        return asdict(self)


Event = Loaded | Ready | Step | Nonfinite | Done | Error


def encode(event: Event) -> str:
    """One event as its JSON line, newline included."""
    return json.dumps(event.to_json()) + "\n"


def decode(line: str) -> Event | None:
    """The event on `line`, or `None` for anything that is not one (kept as a clue)."""
    try:
        data = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    kind = data.get("event")
    try:
        if kind == "loaded":
            return Loaded()
        if kind == "ready":
            return Ready({key: value for key, value in data.items() if key != "event"})
        if kind == "step":
            step = Step(
                int(data["step"]), data.get("loss"), int(data["bits"]), float(data["seconds"])
            )
            # A run record holds 32-bit patterns and finite, non-negative times.
            if not (0 <= step.bits < 2**32 and math.isfinite(step.seconds) and step.seconds >= 0):
                return None
            return step
        if kind == "nonfinite":
            return Nonfinite(int(data["step"]), str(data.get("loss")))
        if kind == "done":
            return Done(
                str(data.get("status")),
                data.get("training_seconds"),
                _whole_or_none(data.get("peak_rss_bytes")),
                _whole_or_none(data.get("end_rss_bytes")),
                _whole_or_none(data.get("high_water_bytes")),
                _whole_or_none(data.get("step_peak_rss_bytes")),
                _wholes_or_none(data.get("shard_processes_peak_private_bytes")),
            )
        if kind == "error":
            return Error(
                str(data.get("kind") or "crash"),
                str(data.get("type") or "error"),
                str(data.get("message") or ""),
                str(data.get("where") or ""),
            )
    except (KeyError, TypeError, ValueError):
        return None  # a malformed event ends nothing and corrupts nothing: it is stray output
    return None


def _whole_or_none(value: Any) -> int | None:
    """`value` if it is a whole number (not a bool), else `None`."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _wholes_or_none(value: Any) -> list[int] | None:
    """`value` if it is a list of whole numbers, else `None`."""
    if not isinstance(value, list) or any(_whole_or_none(each) is None for each in value):
        return None
    return list(value)

"""The run record: one run of one route, as its worker reported it and the harness saw it.

A result file keeps its runs under `"repeats"` (`Repeat.to_json`); `Repeat.from_json`
reads one back, checking every field (see `topos_cli.result.result_part`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec

from topos_cli.result.float_bits import BitPattern, float32_value, is_finite
from topos_cli.result.json_values import loss_for_json
from topos_cli.result.result_part import (
    Bytes,
    Count,
    ProcessId,
    Ratio,
    ResultPart,
    Seconds,
    SignedBytes,
    decode_other,
)
from topos_cli.result.worker_facts import ErrorFacts, NonfiniteFacts, ReadyFacts

#: Every status a run can end in.
STATUSES = ("ok", "failed", "timed out", "interrupted", "nonfinite")

Status = Literal["ok", "failed", "timed out", "interrupted", "nonfinite"]


class ExitFacts(ResultPart):
    """How a worker process ended: its exit status, or the signal that ended it."""

    status: int | None = None
    signal: str | None = None


class RssTimelineFacts(ResultPart):
    """A worker's resident set over time: `points[i]` is the peak over
    `[i * resolution, (i + 1) * resolution)` seconds after it started."""

    sample_interval_seconds: Seconds | None = None
    resolution_seconds: Seconds | None = None
    samples: Count | None = None
    sampled_peak_bytes: Bytes | None = None
    points: list[Bytes] = msgspec.field(default_factory=list)


class MachineFacts(ResultPart):
    """What the machine did while a run's steps ran, from /proc/stat around them: its
    capacity, busy, idle and steal seconds, the CPU seconds of the route, of the grader and
    of everything else, and the load averages (see `topos_cli.judge.time_judgement`)."""

    elapsed_seconds: Seconds
    capacity_seconds: Seconds
    idle_seconds: Seconds
    steal_seconds: Seconds
    cores: Count | None = None
    busy_seconds: Seconds | None = None
    route_cpu_seconds: Seconds | None = None
    grader_cpu_seconds: Seconds | None = None
    others_cpu_seconds: Seconds | None = None
    load_average_start: Ratio | None = None
    load_average_end: Ratio | None = None


class RunFacts(ResultPart):
    """What the harness saw of a run besides its steps: the worker's ready facts, its
    times, how it ended, its memory readings and its resident-set timeline."""

    pid: ProcessId | None = None
    exit: ExitFacts | None = None
    wall_seconds: Seconds | None = None
    ready_after_seconds: Seconds | None = None
    held_seconds: Seconds | None = None
    start_up_overlapped_seconds: Seconds | None = None
    training_seconds: Seconds | None = None
    timeout_seconds: Seconds | None = None
    ready: ReadyFacts | None = None
    #: Where the peak came from: `VmHWM` or `sampling`.
    peak_source: str | None = None
    end_rss_bytes: Bytes | None = None
    high_water_bytes: Bytes | None = None
    step_peak_rss_bytes: Bytes | None = None
    shard_processes_peak_private_bytes: list[Bytes] | None = None
    sampled_peak_rss_bytes: Bytes | None = None
    ru_maxrss_bytes: Bytes | None = None
    cpu_seconds: Seconds | None = None
    rss_timeline: RssTimelineFacts | None = None
    nonfinite: NonfiniteFacts | None = None
    error: ErrorFacts | None = None
    stderr_tail: list[str] = msgspec.field(default_factory=list)
    leftover_processes_killed: Count | None = None
    machine: MachineFacts | None = None
    #: The shard processes' involuntary context switches over the steps (None if unknown).
    shard_involuntary_switches: Count | None = None


class Repeat(ResultPart, kw_only=False, frozen=True):
    """One run of one route: its status, loss bits, step times and memory, and its facts.

    Built by the harness (lists of ints and a facts dict are taken and normalised) or
    read from a result (`from_json`, every field checked).
    """

    route: Annotated[str, msgspec.Meta(min_length=1)]
    repeat: Count
    status: Status
    loss_bits: tuple[BitPattern, ...] = ()
    step_seconds: tuple[Seconds, ...] = ()
    first_step_seconds: Seconds | None = None
    ready_rss_bytes: Bytes | None = None
    peak_rss_bytes: Bytes | None = None
    training_delta_bytes: SignedBytes | None = None
    detail: str | None = None
    facts: RunFacts = RunFacts()
    #: Per step, the route's CPU seconds (its process, all threads, and its shard
    #: processes): empty when the worker did not say (an older topos, no clock).
    step_cpu_seconds: tuple[Seconds, ...] = ()
    #: Per step, the involuntary context switches of the worker process (empty if unknown).
    step_involuntary_switches: tuple[Count, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"a run's status is one of {', '.join(STATUSES)}; not {self.status!r}")
        set_field = msgspec.structs.force_setattr
        set_field(self, "loss_bits", tuple(BitPattern(bits) for bits in self.loss_bits))
        set_field(self, "step_seconds", tuple(float(value) for value in self.step_seconds))
        if isinstance(self.facts, Mapping):
            set_field(self, "facts", RunFacts.from_json(dict(self.facts)))
        if self.first_step_seconds is None and self.step_seconds:
            set_field(self, "first_step_seconds", self.step_seconds[0])
        set_field(self, "step_cpu_seconds", tuple(float(value) for value in self.step_cpu_seconds))
        set_field(self, "step_involuntary_switches", tuple(self.step_involuntary_switches))
        if (
            self.training_delta_bytes is None
            and self.peak_rss_bytes is not None
            and self.ready_rss_bytes is not None
        ):
            set_field(self, "training_delta_bytes", self.peak_rss_bytes - self.ready_rss_bytes)

    @property
    def ready(self) -> ReadyFacts | None:
        """What the worker said when ready, if it got that far."""
        return self.facts.ready

    @property
    def step_tensor_bytes(self) -> int | None:
        """A native run's step tensors (`NativeFacts.step_tensor_bytes`), as its worker
        measured them when ready; `None` for topos's own routes and older workers."""
        native = None if self.ready is None else self.ready.native
        return None if native is None else native.step_tensor_bytes

    @property
    def losses(self) -> tuple[float, ...]:
        """The losses, widened exactly from their float32 bit patterns."""
        return tuple(float32_value(bits) for bits in self.loss_bits)

    @property
    def nonfinite_step(self) -> int | None:
        """The first step whose loss is NaN or infinite, if any."""
        for step, bits in enumerate(self.loss_bits):
            if not is_finite(bits):
                return step
        return None

    def measured_step_seconds(self, warmup_steps: int) -> tuple[float, ...]:
        """The step times that count toward the median: all but the first `warmup_steps`.

        A run too short to spare its warm-up steps counts them all rather
        than report nothing.
        """
        measured = self.step_seconds[warmup_steps:]
        return measured if measured else self.step_seconds

    def to_json(self) -> dict[str, Any]:
        """The run as a result keeps it: bit patterns as hexadecimal, with its step count
        and first and final loss for people reading the file."""
        # Hand-written because it adds derived fields (steps, first and final loss, for
        # people reading the file) that are no fields of the record: reading ignores them.
        fields = super().to_json()
        return {
            "route": fields["route"],
            "repeat": fields["repeat"],
            "status": fields["status"],
            "detail": fields["detail"],
            "steps": len(self.loss_bits),
            "first_loss": loss_for_json(self.loss_bits[0]) if self.loss_bits else None,
            "final_loss": loss_for_json(self.loss_bits[-1]) if self.loss_bits else None,
            **{key: value for key, value in fields.items() if key not in _LEADING},
        }

    @classmethod
    def from_json(cls, data: Any) -> Repeat:
        """Reads a run from a result; raises `msgspec.ValidationError` (a `ValueError`)
        naming the field that is wrong."""
        return msgspec.convert(data, cls, dec_hook=decode_other)


#: The fields `to_json` writes first, before the derived ones.
_LEADING = ("route", "repeat", "status", "detail")

"""The run record: one run of one route, as its worker reported it.

Its dict form (`RunRecord.to_dict`) is what a result file keeps under
`"repeats"`; the README's "Reading a verdict" shows one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from topos_cli.result.float_bits import float32_value, format_bits, is_finite, parse_bits
from topos_cli.result.json_values import loss_for_json

#: Every status a run can end in.
STATUSES = ("ok", "failed", "timed out", "interrupted", "nonfinite")


@dataclass(frozen=True)
class RunRecord:
    """One run of one route, as its worker reported it; `to_dict` is its JSON form."""

    route: str
    repeat: int
    status: str
    loss_bits: tuple[int, ...] = ()
    step_seconds: tuple[float, ...] = ()
    first_step_seconds: float | None = None
    ready_rss_bytes: int | None = None
    peak_rss_bytes: int | None = None
    training_delta_bytes: int | None = None
    detail: str | None = None
    facts: Mapping[str, Any] = field(default_factory=dict)
    #: Per step, the route's CPU seconds (its process, all threads, and its shard
    #: processes): empty when the worker did not say (an older topos, no clock).
    step_cpu_seconds: tuple[float, ...] = ()
    #: Per step, the involuntary context switches of the worker process (empty if unknown).
    step_involuntary_switches: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.route, str) or not self.route:
            raise ValueError(f"a route is named by a non-empty string, not {self.route!r}")
        if self.status not in STATUSES:
            raise ValueError(f"a run's status is one of {', '.join(STATUSES)}; not {self.status!r}")
        if isinstance(self.repeat, bool) or not isinstance(self.repeat, int) or self.repeat < 0:
            raise ValueError(f"a repeat index is a non-negative integer, not {self.repeat!r}")
        # Every field is checked here, where a result file's runs are read: a wrong type
        # found later, after an hour's grade, would cost the grade.
        for name in ("loss_bits", "step_seconds"):
            if isinstance(getattr(self, name), str | bytes | Mapping):
                raise ValueError(f"{self.route}: {name} is a list")
        # Normalise so callers may pass lists, hex strings or ints alike.
        object.__setattr__(self, "loss_bits", tuple(parse_bits(bits) for bits in self.loss_bits))
        if not all(_is_number(value) for value in self.step_seconds):
            raise ValueError(f"{self.route}: step times are numbers")
        seconds = tuple(float(value) for value in self.step_seconds)
        if any(not math.isfinite(value) or value < 0.0 for value in seconds):
            raise ValueError(f"{self.route}: step times are finite and non-negative")
        object.__setattr__(self, "step_seconds", seconds)
        # CPU times are best effort: a series of another length or holding a non-number
        # is dropped (disturbance then unknown), never an error that would cost the grade.
        cpu = self.step_cpu_seconds
        if isinstance(cpu, str | bytes | Mapping) or not all(
            _is_number(value) and math.isfinite(value) and value >= 0 for value in cpu
        ):
            cpu = ()
        object.__setattr__(self, "step_cpu_seconds", tuple(float(value) for value in cpu))
        switches = self.step_involuntary_switches
        if isinstance(switches, str | bytes | Mapping) or not all(
            isinstance(value, int) and not isinstance(value, bool) and value >= 0
            for value in switches
        ):
            switches = ()
        object.__setattr__(self, "step_involuntary_switches", tuple(switches))
        first = self.first_step_seconds
        if first is not None and not (_is_number(first) and math.isfinite(first) and first >= 0):
            raise ValueError(
                f"{self.route}: first_step_seconds is a non-negative number or null, not {first!r}"
            )
        for name in ("ready_rss_bytes", "peak_rss_bytes", "training_delta_bytes"):
            value = getattr(self, name)
            whole = isinstance(value, int) and not isinstance(value, bool)
            if value is not None and not (whole and (value >= 0 or name == "training_delta_bytes")):
                raise ValueError(
                    f"{self.route}: {name} is a whole number of bytes or null, not {value!r}"
                )
        if self.detail is not None and not isinstance(self.detail, str):
            raise ValueError(f"{self.route}: detail is text or null, not {self.detail!r}")
        if not isinstance(self.facts, Mapping):
            raise ValueError(f"{self.route}: facts is an object, not {type(self.facts).__name__}")
        if self.first_step_seconds is None and seconds:
            object.__setattr__(self, "first_step_seconds", seconds[0])
        if (
            self.training_delta_bytes is None
            and self.peak_rss_bytes is not None
            and self.ready_rss_bytes is not None
        ):
            object.__setattr__(
                self, "training_delta_bytes", self.peak_rss_bytes - self.ready_rss_bytes
            )

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

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        """Reads a run from its dict (the module docstring's shape); raises `ValueError`."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a run is a JSON object, not {type(data).__name__}")
        missing = [key for key in ("route", "repeat", "status") if key not in data]
        if missing:
            raise ValueError(f"a run lacks {', '.join(missing)}")
        try:
            return cls(
                route=data["route"],
                repeat=data["repeat"],
                status=data["status"],
                loss_bits=tuple(data.get("loss_bits") or ()),
                step_seconds=tuple(data.get("step_seconds") or ()),
                first_step_seconds=data.get("first_step_seconds"),
                ready_rss_bytes=data.get("ready_rss_bytes"),
                peak_rss_bytes=data.get("peak_rss_bytes"),
                training_delta_bytes=data.get("training_delta_bytes"),
                detail=data.get("detail"),
                facts=_object_or_empty(data.get("facts"), "facts"),
                step_cpu_seconds=tuple(data.get("step_cpu_seconds") or ()),
                step_involuntary_switches=tuple(data.get("step_involuntary_switches") or ()),
            )
        except TypeError as error:
            raise ValueError(f"a run holds a value of the wrong type: {error}") from None

    def to_dict(self) -> dict[str, Any]:
        """The run as a JSON-ready dict, bit patterns as hexadecimal, plus first and final loss."""
        return {
            "route": self.route,
            "repeat": self.repeat,
            "status": self.status,
            "detail": self.detail,
            "steps": len(self.loss_bits),
            "first_loss": loss_for_json(self.loss_bits[0]) if self.loss_bits else None,
            "final_loss": loss_for_json(self.loss_bits[-1]) if self.loss_bits else None,
            "loss_bits": [format_bits(bits) for bits in self.loss_bits],
            "step_seconds": list(self.step_seconds),
            "step_cpu_seconds": list(self.step_cpu_seconds),
            "step_involuntary_switches": list(self.step_involuntary_switches),
            "first_step_seconds": self.first_step_seconds,
            "ready_rss_bytes": self.ready_rss_bytes,
            "peak_rss_bytes": self.peak_rss_bytes,
            "training_delta_bytes": self.training_delta_bytes,
            "facts": dict(self.facts),
        }


def _is_number(value: Any) -> bool:
    """Whether `value` is an int or a float (a bool is neither, here)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _object_or_empty(value: Any, name: str) -> dict[str, Any]:
    """`value` as a dict (`{}` for null); raises `ValueError` for anything but an object."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} is an object, not {type(value).__name__}")
    return dict(value)

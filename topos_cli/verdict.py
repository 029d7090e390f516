"""The verdict of a grade: parity, speed, memory, noise warnings, one sentence, an exit status.

The verdict is computed in the parent process from what the workers reported,
so it imports neither NumPy nor the library. Its input is one record per run
of a route (a *repeat*), as a `RepeatResult` or as the dict `to_dict` writes:

    {
      "route": "recorded",          # the route's name
      "repeat": 0,                  # 0-based index among this route's runs
      "status": "ok",               # ok | failed | timed out | interrupted | nonfinite
      "detail": null,               # why it is not ok: exit status or signal, stderr tail
      "loss_bits": ["40135d8e", ...],  # float32 loss bit patterns, one per measured step
      "step_seconds": [0.41, ...],  # wall time of each measured step, step 0 first
      "first_step_seconds": 0.93,   # the first step the process ran (see below), or null
      "ready_rss_bytes": 412000000, # VmRSS at ready, or null where not measured
      "peak_rss_bytes": 1130000000, # VmHWM at the end of the measured steps, or null
      "training_delta_bytes": 718000000,  # peak minus ready; derived when null
      "facts": {...}                # anything else the worker said (plan summary, ...)
    }

How a worker's JSON-lines events map onto it: `ready` gives
`ready_rss_bytes` (and, when the worker ran a thrown-away warm-up step
before ready, its time as `first_step_seconds`; the rest of `ready` goes to
`facts`); each `step` appends its bit pattern to `loss_bits` and its time to
`step_seconds`; `done` gives `peak_rss_bytes` (and `training_delta_bytes`);
how the process ended gives `status` and `detail`. A worker that stops at a
non-finite loss reports that step's bits too, so the verdict can name it.
Bit patterns may also be given as integers. When `first_step_seconds` is
null, the first measured step stands in for it. Independently, the first
`VerdictSettings.warmup_steps` measured steps (default 1) are left out of
the median ms/step.

The verdict's JSON (`Verdict.to_json`) is what the result file holds under
`"verdict"`; `report` renders it and `compare` reads the raw repeats beside it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from topos_cli.errors import ExitStatus
from topos_cli.float_bits import (
    describe_bits,
    float32_value,
    format_bits,
    is_finite,
    parse_bits,
    ulps_between,
)
from topos_cli.statistics import (
    RatioEstimate,
    Summary,
    mann_whitney,
    median,
    outlier_indices,
    ratio_of_medians,
    summarize,
)

#: Every status a run can end in.
STATUSES = ("ok", "failed", "timed out", "interrupted", "nonfinite")

#: The route every other route is measured against.
REFERENCE_ROUTE = "engine"

_MEBIBYTE = 1024 * 1024


@dataclass(frozen=True)
class RepeatResult:
    """One run of one route, as its worker reported it; the module docstring gives its dict."""

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
    def from_dict(cls, data: Mapping[str, Any]) -> RepeatResult:
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
            "first_loss": _loss_for_json(self.loss_bits[0]) if self.loss_bits else None,
            "final_loss": _loss_for_json(self.loss_bits[-1]) if self.loss_bits else None,
            "loss_bits": [format_bits(bits) for bits in self.loss_bits],
            "step_seconds": list(self.step_seconds),
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


def _loss_for_json(bits: int) -> float | str:
    """A loss as a JSON number, or as `"nan"`, `"inf"`, `"-inf"`, which strict JSON lacks."""
    value = float32_value(bits)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


@dataclass(frozen=True)
class VerdictSettings:
    """The thresholds the verdict applies; the defaults are the documented ones."""

    reference: str = REFERENCE_ROUTE
    #: Leading measured steps left out of the median (their times are reported on their own).
    warmup_steps: int = 1
    #: A speed factor past this is a claim of faster or slower, marked `~` if not significant.
    speed_threshold: float = 1.0
    #: The Mann-Whitney p-value under which a difference in speed is significant.
    significance_level: float = 0.05
    #: Warn when a route's step times vary by more than this coefficient of variation.
    variation_limit: float = 0.10
    #: Tukey's fence, in IQRs beyond the quartiles, past which a step is an outlier.
    outlier_fence: float = 1.5
    #: Warn when more than this fraction of a route's steps are outliers.
    outlier_fraction_limit: float = 0.05
    #: Warn when a route's per-repeat medians span more than this fraction of their median.
    repeat_spread_limit: float = 0.10
    #: Warn when the load average exceeds this many runnable processes per core.
    load_per_core_limit: float = 0.5
    bootstrap_resamples: int = 1000
    confidence: float = 0.95

    def to_json(self) -> dict[str, Any]:
        """The settings as a JSON-ready dict."""
        return asdict(self)


def _run_label(route: str, repeat: int, name_repeats: bool) -> str:
    """How a run is named to people: the route, and its 1-based repeat when there are several."""
    return f"{route} (repeat {repeat + 1})" if name_repeats else route


@dataclass(frozen=True)
class Divergence:
    """The first step where one run's loss bits part from another's."""

    step: int
    reference_route: str
    reference_repeat: int
    reference_bits: int
    route: str
    repeat: int
    bits: int
    #: Distance in float32 ulps; `None` when either loss is NaN (not comparable).
    ulps: int | None

    def describe(self, name_repeats: bool = False) -> str:
        """The divergence for people.

        For example `step 7: engine 2.30258512 (40135d8e) vs recorded
        2.30258536 (40135d8f), 1 ulp apart`.
        """
        if self.ulps is None:
            distance = "not comparable (NaN)"
        else:
            distance = f"{self.ulps} ulp{'' if self.ulps == 1 else 's'} apart"
        reference = _run_label(self.reference_route, self.reference_repeat, name_repeats)
        other = _run_label(self.route, self.repeat, name_repeats)
        return (
            f"step {self.step}: {reference} {describe_bits(self.reference_bits)} "
            f"vs {other} {describe_bits(self.bits)}, {distance}"
        )

    def to_json(self) -> dict[str, Any]:
        """The divergence as a JSON-ready dict, bits in hexadecimal, values where finite."""
        return {
            "step": self.step,
            "reference": {
                "route": self.reference_route,
                "repeat": self.reference_repeat,
                "bits": format_bits(self.reference_bits),
                "loss": _loss_for_json(self.reference_bits),
            },
            "other": {
                "route": self.route,
                "repeat": self.repeat,
                "bits": format_bits(self.bits),
                "loss": _loss_for_json(self.bits),
            },
            "ulps": self.ulps,
            "description": self.describe(name_repeats=True),
        }


def first_divergence(reference: RepeatResult, other: RepeatResult) -> Divergence | None:
    """The first step, over the steps both runs reached, where their loss bits differ."""
    for step, (expected, actual) in enumerate(
        zip(reference.loss_bits, other.loss_bits, strict=False)
    ):
        if expected != actual:
            return Divergence(
                step=step,
                reference_route=reference.route,
                reference_repeat=reference.repeat,
                reference_bits=expected,
                route=other.route,
                repeat=other.repeat,
                bits=actual,
                ulps=ulps_between(expected, actual),
            )
    return None


def _earliest(divergences: Iterable[Divergence | None]) -> Divergence | None:
    """The divergence at the smallest step (the first such in order on a tie)."""
    found = [divergence for divergence in divergences if divergence is not None]
    return min(found, key=lambda divergence: divergence.step) if found else None


@dataclass(frozen=True)
class RouteParity:
    """How one route's runs agree with each other (A/A) and with the reference run."""

    route: str
    runs: int
    #: Whether this route's repeats agree with each other; `None` with fewer than two.
    repeatable: bool | None
    repeat_divergence: Divergence | None
    #: Whether every run of this route agrees with the reference run; `None` without losses.
    matches_reference: bool | None
    divergence: Divergence | None

    def to_json(self) -> dict[str, Any]:
        """The route's parity as a JSON-ready dict."""
        return {
            "route": self.route,
            "runs": self.runs,
            "repeatable": self.repeatable,
            "repeat_divergence": _optional_json(self.repeat_divergence),
            "matches_reference": self.matches_reference,
            "divergence": _optional_json(self.divergence),
        }


@dataclass(frozen=True)
class Parity:
    """Whether every run's loss bits agree at every step.

    `status` is `bit-identical`; `broken` (`divergence` names the earliest
    step where some run parts from the reference run); `not checked` (fewer
    than two runs reported losses); or `incomplete` (no disagreement, but
    some runs, listed in `stopped_short`, reached fewer steps than others).
    """

    status: str
    #: How many leading steps agree in every run that reported losses.
    steps: int
    runs: int
    reference_route: str | None
    reference_repeat: int | None
    divergence: Divergence | None
    routes: tuple[RouteParity, ...]
    #: `(route, repeat, steps reached)` of each run that reached fewer steps than the longest.
    stopped_short: tuple[tuple[str, int, int], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The parity as a JSON-ready dict."""
        return {
            "status": self.status,
            "steps": self.steps,
            "runs": self.runs,
            "reference": None
            if self.reference_route is None
            else {"route": self.reference_route, "repeat": self.reference_repeat},
            "divergence": _optional_json(self.divergence),
            "routes": [route.to_json() for route in self.routes],
            "stopped_short": [
                {"route": route, "repeat": repeat, "steps": steps}
                for route, repeat, steps in self.stopped_short
            ],
        }


def _optional_json(value: Any) -> Any:
    """`value.to_json()`, or `None` for `None`."""
    return None if value is None else value.to_json()


def check_parity(repeats: Sequence[RepeatResult], reference_route: str = REFERENCE_ROUTE) -> Parity:
    """Compares every run's loss bits with the reference run's, step by step.

    The reference run is the reference route's first run that reported a
    loss (else the first such run of any route). Bit equality is transitive,
    so agreeing with it at every step means all runs agree with each other.
    """
    with_losses = [repeat for repeat in repeats if repeat.loss_bits]
    routes = list(dict.fromkeys(repeat.route for repeat in repeats))
    reference = next(
        (repeat for repeat in with_losses if repeat.route == reference_route),
        with_losses[0] if with_losses else None,
    )
    route_parities = []
    for route in routes:
        runs = [repeat for repeat in with_losses if repeat.route == route]
        repeat_divergence = _earliest(first_divergence(runs[0], run) for run in runs[1:])
        divergence = (
            _earliest(first_divergence(reference, run) for run in runs)
            if reference is not None
            else None
        )
        route_parities.append(
            RouteParity(
                route=route,
                runs=len(runs),
                repeatable=None if len(runs) < 2 else repeat_divergence is None,
                repeat_divergence=repeat_divergence,
                matches_reference=None if not runs else divergence is None,
                divergence=divergence,
            )
        )
    divergence = _earliest(route.divergence for route in route_parities)
    compared = min((len(repeat.loss_bits) for repeat in with_losses), default=0)
    longest = max((len(repeat.loss_bits) for repeat in repeats), default=0)
    stopped_short = tuple(
        (repeat.route, repeat.repeat, len(repeat.loss_bits))
        for repeat in repeats
        if len(repeat.loss_bits) < longest
    )
    if divergence is not None:
        status = "broken"
        compared = divergence.step
    elif len(with_losses) < 2:
        status = "not checked"
    elif stopped_short:
        status = "incomplete"
    else:
        status = "bit-identical"
    return Parity(
        status=status,
        steps=compared,
        runs=len(with_losses),
        reference_route=None if reference is None else reference.route,
        reference_repeat=None if reference is None else reference.repeat,
        divergence=divergence,
        routes=tuple(route_parities),
        stopped_short=stopped_short,
    )


@dataclass(frozen=True)
class SpeedRatio:
    """A route's speed relative to the reference, phrased the way people read it.

    `factor` is at least 1: how many times faster (reference time over this
    route's) or slower (this route's over the reference's). `time_ratio` is
    always this route's median step time over the reference's, with its
    bootstrap interval. `significant` is `None` when either route has fewer
    than two completed repeats (no test is made); `tentative` marks a factor
    past the threshold whose difference is not significant, shown with `~`.
    """

    factor: float
    direction: str
    uncertainty: float
    time_ratio: RatioEstimate
    p_value: float | None
    significant: bool | None
    tentative: bool

    @property
    def phrase(self) -> str:
        """E.g. `1.12 ± 0.03x faster`, `~1.04 ± 0.05x slower`, `1.00 ± 0.01x the speed`."""
        mark = "~" if self.tentative else ""
        wording = "the speed" if self.direction == "same" else self.direction
        return f"{mark}{self.factor:.2f} ± {self.uncertainty:.2f}x {wording}"

    def to_json(self) -> dict[str, Any]:
        """The ratio as a JSON-ready dict, with its phrase."""
        return {
            "factor": self.factor,
            "direction": self.direction,
            "uncertainty": self.uncertainty,
            "time_ratio": self.time_ratio.to_json(),
            "p_value": self.p_value,
            "significant": self.significant,
            "tentative": self.tentative,
            "phrase": self.phrase,
        }


@dataclass(frozen=True)
class Speed:
    """A route's time per step over its completed repeats, in milliseconds."""

    #: The pooled measured steps of every completed repeat (warm-up steps left out).
    milliseconds_per_step: Summary
    repeat_medians_milliseconds: tuple[float, ...]
    #: The median over repeats of the first step's time, reported on its own.
    first_step_milliseconds: float | None
    excluded_steps: int
    outliers: int
    ratio: SpeedRatio | None
    #: Raw per-step times in seconds, one tuple per completed repeat (for rank tests).
    step_seconds: tuple[tuple[float, ...], ...] = field(repr=False, default=())

    def to_json(self) -> dict[str, Any]:
        """The speed as a JSON-ready dict (raw step times live in the repeats, not here)."""
        return {
            "milliseconds_per_step": self.milliseconds_per_step.to_json(),
            "repeat_medians_milliseconds": list(self.repeat_medians_milliseconds),
            "repeat_minimum_milliseconds": min(self.repeat_medians_milliseconds),
            "repeat_maximum_milliseconds": max(self.repeat_medians_milliseconds),
            "first_step_milliseconds": self.first_step_milliseconds,
            "excluded_steps": self.excluded_steps,
            "outliers": self.outliers,
            "ratio": _optional_json(self.ratio),
        }


@dataclass(frozen=True)
class Memory:
    """A route's memory over its completed repeats (medians), with ratios to the reference."""

    peak_rss_bytes: int | None
    peak_rss_range: tuple[int, int] | None
    ready_rss_bytes: int | None
    training_delta_bytes: int | None
    training_delta_range: tuple[int, int] | None
    peak_ratio: float | None
    training_delta_ratio: float | None

    def to_json(self) -> dict[str, Any]:
        """The memory figures as a JSON-ready dict."""
        return {
            "peak_rss_bytes": self.peak_rss_bytes,
            "peak_rss_range": None if self.peak_rss_range is None else list(self.peak_rss_range),
            "ready_rss_bytes": self.ready_rss_bytes,
            "training_delta_bytes": self.training_delta_bytes,
            "training_delta_range": None
            if self.training_delta_range is None
            else list(self.training_delta_range),
            "peak_ratio": self.peak_ratio,
            "training_delta_ratio": self.training_delta_ratio,
        }


@dataclass(frozen=True)
class Failure:
    """A run that did not finish cleanly."""

    repeat: int
    status: str
    detail: str | None
    nonfinite_step: int | None

    def to_json(self) -> dict[str, Any]:
        """The failure as a JSON-ready dict."""
        return asdict(self)


# Which status a route shows when its runs ended differently: its own faults first.
_STATUS_SEVERITY = ("failed", "timed out", "nonfinite", "interrupted", "ok")


@dataclass(frozen=True)
class RouteVerdict:
    """Everything the verdict says about one route."""

    route: str
    status: str
    repeats: int
    completed: int
    failures: tuple[Failure, ...]
    speed: Speed | None
    memory: Memory | None

    def to_json(self) -> dict[str, Any]:
        """The route's verdict as a JSON-ready dict."""
        return {
            "route": self.route,
            "status": self.status,
            "repeats": self.repeats,
            "completed": self.completed,
            "failures": [failure.to_json() for failure in self.failures],
            "speed": _optional_json(self.speed),
            "memory": _optional_json(self.memory),
        }


@dataclass(frozen=True)
class NoiseWarning:
    """Why the machine may have been too noisy to tell, and what to do about it."""

    kind: str
    route: str | None
    message: str
    remedy: str

    def to_json(self) -> dict[str, Any]:
        """The warning as a JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class Verdict:
    """The grade's conclusion: per-route figures, parity, warnings, summary and exit status."""

    reference: str
    settings: VerdictSettings
    routes: tuple[RouteVerdict, ...]
    parity: Parity
    warnings: tuple[NoiseWarning, ...]
    summary: str
    exit_status: int

    def route(self, name: str) -> RouteVerdict:
        """The verdict on the route called `name`; raises `KeyError` if none."""
        for route in self.routes:
            if route.route == name:
                return route
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        """The verdict as a JSON-ready dict (`json.dumps` accepts it as is)."""
        return {
            "reference": self.reference,
            "summary": self.summary,
            "exit_status": int(self.exit_status),
            "parity": self.parity.to_json(),
            "routes": [route.to_json() for route in self.routes],
            "warnings": [warning.to_json() for warning in self.warnings],
            "settings": self.settings.to_json(),
        }


def _median_bytes(values: Sequence[int]) -> int:
    """The median of byte counts, rounded to a whole byte."""
    return round(median(values))


def _measure_memory(runs: Sequence[RepeatResult]) -> Memory | None:
    """The medians and ranges of a route's memory figures; `None` if none were measured."""
    peaks = [run.peak_rss_bytes for run in runs if run.peak_rss_bytes is not None]
    readies = [run.ready_rss_bytes for run in runs if run.ready_rss_bytes is not None]
    deltas = [run.training_delta_bytes for run in runs if run.training_delta_bytes is not None]
    if not peaks and not deltas:
        return None
    return Memory(
        peak_rss_bytes=_median_bytes(peaks) if peaks else None,
        peak_rss_range=(min(peaks), max(peaks)) if peaks else None,
        ready_rss_bytes=_median_bytes(readies) if readies else None,
        training_delta_bytes=_median_bytes(deltas) if deltas else None,
        training_delta_range=(min(deltas), max(deltas)) if deltas else None,
        peak_ratio=None,
        training_delta_ratio=None,
    )


def _measure_speed(runs: Sequence[RepeatResult], settings: VerdictSettings) -> Speed | None:
    """A route's step-time summary over its completed runs; `None` if none timed a step."""
    timed = [run for run in runs if run.step_seconds]
    if not timed:
        return None
    per_run = tuple(run.measured_step_seconds(settings.warmup_steps) for run in timed)
    pooled = [seconds * 1000.0 for seconds in _flatten(per_run)]
    first_steps = [run.first_step_seconds for run in timed if run.first_step_seconds is not None]
    return Speed(
        milliseconds_per_step=summarize(pooled),
        repeat_medians_milliseconds=tuple(median(seconds) * 1000.0 for seconds in per_run),
        first_step_milliseconds=median(first_steps) * 1000.0 if first_steps else None,
        excluded_steps=sum(len(run.step_seconds) for run in timed) - len(pooled),
        # Outliers are judged within each run, so a shift between runs is not counted as one.
        outliers=sum(len(outlier_indices(seconds, settings.outlier_fence)) for seconds in per_run),
        ratio=None,
        step_seconds=per_run,
    )


def _flatten(groups: Iterable[Sequence[float]]) -> list[float]:
    """The values of every group, in order, in one list."""
    return [value for group in groups for value in group]


def _speed_ratio(speed: Speed, reference: Speed, settings: VerdictSettings) -> SpeedRatio | None:
    """How this route's speed compares with the reference's; `None` if undefined."""
    mine = _flatten(speed.step_seconds)
    theirs = _flatten(reference.step_seconds)
    try:
        estimate = ratio_of_medians(
            mine,
            theirs,
            resamples=settings.bootstrap_resamples,
            confidence=settings.confidence,
        )
    except ValueError:
        return None  # a zero median: no ratio to speak of
    if estimate.ratio == 0.0:
        return None
    if estimate.ratio <= 1.0:
        direction = "faster"
        factor = 1.0 / estimate.ratio
        # The interval of the reciprocal is the reciprocal of the interval.
        low = 1.0 / estimate.upper
        high = math.inf if estimate.lower == 0.0 else 1.0 / estimate.lower
        uncertainty = max(factor - low, high - factor)
    else:
        direction = "slower"
        factor = estimate.ratio
        uncertainty = estimate.uncertainty
    if f"{factor:.2f}" == "1.00":
        direction = "same"
    # Per-step times of a single run are not independent samples of a route
    # (the run drifts as a whole); with two repeats each, the pooled ranks
    # at least span the machine's run-to-run variation.
    tested = len(speed.step_seconds) >= 2 and len(reference.step_seconds) >= 2
    p_value = mann_whitney(mine, theirs).p_value if tested else None
    significant = None if p_value is None else p_value < settings.significance_level
    tentative = significant is False and direction != "same" and factor > settings.speed_threshold
    return SpeedRatio(
        factor=factor,
        direction=direction,
        uncertainty=uncertainty,
        time_ratio=estimate,
        p_value=p_value,
        significant=significant,
        tentative=tentative,
    )


def _ratio(value: int | None, reference: int | None) -> float | None:
    """`value / reference`, or `None` when either is missing or the reference is not positive."""
    if value is None or reference is None or reference <= 0:
        return None
    return value / reference


def _route_status(runs: Sequence[RepeatResult]) -> str:
    """The status a route shows: `ok` if every run was, else the most severe among them."""
    return min((run.status for run in runs), key=_STATUS_SEVERITY.index)


def _judge_route(
    route: str,
    runs: Sequence[RepeatResult],
    settings: VerdictSettings,
) -> RouteVerdict:
    """A route's figures before ratios: status, failures, speed and memory of completed runs."""
    completed = [run for run in runs if run.status == "ok"]
    failures = tuple(
        Failure(run.repeat, run.status, run.detail, run.nonfinite_step)
        for run in runs
        if run.status != "ok"
    )
    return RouteVerdict(
        route=route,
        status=_route_status(runs),
        repeats=len(runs),
        completed=len(completed),
        failures=failures,
        speed=_measure_speed(completed, settings),
        memory=_measure_memory(completed),
    )


def _with_ratios(
    route: RouteVerdict, reference: RouteVerdict | None, settings: VerdictSettings
) -> RouteVerdict:
    """The route's verdict with its speed and memory ratios to the reference filled in."""
    if reference is None or route.route == reference.route:
        return route
    speed = route.speed
    if speed is not None and reference.speed is not None:
        speed = replace(speed, ratio=_speed_ratio(speed, reference.speed, settings))
    memory = route.memory
    if memory is not None and reference.memory is not None:
        memory = replace(
            memory,
            peak_ratio=_ratio(memory.peak_rss_bytes, reference.memory.peak_rss_bytes),
            training_delta_ratio=_ratio(
                memory.training_delta_bytes, reference.memory.training_delta_bytes
            ),
        )
    return replace(route, speed=speed, memory=memory)


def _noise_warnings(
    routes: Sequence[RouteVerdict],
    settings: VerdictSettings,
    load_average: float | None,
    cores: int | None,
) -> list[NoiseWarning]:
    """Warnings, each with a remedy, when the machine may have been too noisy to tell."""
    warnings = []
    for route in routes:
        speed = route.speed
        if speed is None:
            continue
        summary = speed.milliseconds_per_step
        if summary.coefficient_of_variation > settings.variation_limit:
            warnings.append(
                NoiseWarning(
                    kind="variation",
                    route=route.route,
                    message=(
                        f"{route.route}: step times vary by "
                        f"{summary.coefficient_of_variation:.0%} (coefficient of variation "
                        f"over {settings.variation_limit:.0%})"
                    ),
                    remedy=(
                        "close other programs, set --threads below the number of cores, "
                        "and grade with --repeat 3 or more"
                    ),
                )
            )
        if summary.count and speed.outliers / summary.count > settings.outlier_fraction_limit:
            warnings.append(
                NoiseWarning(
                    kind="outliers",
                    route=route.route,
                    message=(
                        f"{route.route}: {speed.outliers} of {summary.count} steps are "
                        f"outliers (beyond {settings.outlier_fence:g} IQR of the quartiles)"
                    ),
                    remedy="something else ran during the grade; grade again on a quiet machine",
                )
            )
        medians = speed.repeat_medians_milliseconds
        if len(medians) >= 2:
            spread = (max(medians) - min(medians)) / median(medians)
            if spread > settings.repeat_spread_limit:
                warnings.append(
                    NoiseWarning(
                        kind="repeat spread",
                        route=route.route,
                        message=(
                            f"{route.route}: its repeats' medians span {spread:.0%} "
                            f"({min(medians):.1f} to {max(medians):.1f} ms/step)"
                        ),
                        remedy=(
                            "the machine drifted between runs (frequency scaling, heat, other "
                            "load); grade on a quiet machine with more --repeat"
                        ),
                    )
                )
    if load_average is not None:
        limit = settings.load_per_core_limit * (cores if cores else 1)
        if load_average > limit:
            on_cores = f" on {cores} cores" if cores else ""
            warnings.append(
                NoiseWarning(
                    kind="load",
                    route=None,
                    message=f"the machine was busy: load average {load_average:.2f}{on_cores}",
                    remedy="stop other work on the machine, or grade on an idle one",
                )
            )
    return warnings


def _format_milliseconds(milliseconds: float) -> str:
    """A time per step with about three significant digits, e.g. `337.2`, `12.4`, `0.812`."""
    if milliseconds >= 100:
        return f"{milliseconds:.1f}"
    if milliseconds >= 1:
        return f"{milliseconds:.2f}"
    return f"{milliseconds:.3f}"


def _route_clause(route: RouteVerdict, reference: RouteVerdict | None, reference_name: str) -> str:
    """The summary's words about one route."""
    if route.completed == 0:
        failure = route.failures[0] if route.failures else None
        detail = _first_line(failure.detail) if failure is not None else None
        return f"{route.route}: {route.status}" + (f" ({detail})" if detail else "")
    facts = []
    speed, memory = route.speed, route.memory
    compared = reference is not None and route.route != reference.route
    ratio = speed.ratio if speed is not None else None
    peak_ratio = memory.peak_ratio if memory is not None else None
    if compared and (ratio is not None or peak_ratio is not None):
        if ratio is not None:
            facts.append(ratio.phrase)
        if peak_ratio is not None:
            facts.append(f"{peak_ratio:.2f}x the memory")
        # "1.12x faster than engine", but "1.12x faster, 0.78x the memory of engine".
        speed_last = ratio is not None and peak_ratio is None and ratio.direction != "same"
        facts[-1] += f" {'than' if speed_last else 'of'} {reference_name}"
    else:
        if speed is not None:
            facts.append(f"{_format_milliseconds(speed.milliseconds_per_step.median)} ms/step")
        if memory is not None and memory.peak_rss_bytes is not None:
            facts.append(f"{memory.peak_rss_bytes / _MEBIBYTE:.0f} MiB peak")
    clause = f"{route.route}: " + ", ".join(facts) if facts else f"{route.route}: {route.status}"
    if route.failures:
        clause += f" ({len(route.failures)} of {route.repeats} repeats {route.status})"
    return clause


def _first_line(text: str | None, limit: int = 80) -> str | None:
    """The first non-empty line of `text`, shortened to `limit` characters."""
    if not text:
        return None
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _parity_clause(parity: Parity, name_repeats: bool) -> str:
    """The summary's words about parity."""
    if parity.status == "bit-identical":
        return f"losses bit-identical over {parity.steps} steps"
    if parity.status == "not checked" and parity.runs == 0:
        return "parity not checked: no run reported a loss"
    if parity.status == "broken" and parity.divergence is not None:
        divergence = parity.divergence
        if divergence.route == divergence.reference_route:
            return (
                f"{divergence.route} is not repeatable: its losses part at "
                f"{divergence.describe(name_repeats=True)}"
            )
        return f"losses part at {divergence.describe(name_repeats)}"
    short = [
        f"{_run_label(route, repeat, name_repeats)} "
        + (f"stopped after {steps} steps" if steps else "reported no losses")
        for route, repeat, steps in parity.stopped_short
    ]
    if parity.status == "incomplete":
        return (
            f"parity incomplete: losses bit-identical over the first {parity.steps} steps; "
            + ", ".join(short)
        )
    if short:
        return "parity not checked: " + ", ".join(short)
    return "parity not checked: a single run"


def _nonfinite_clause(routes: Sequence[RouteVerdict]) -> str | None:
    """The summary's words about losses that turned NaN or infinite, if any did."""
    found = [
        f"{route.route} at step {failure.nonfinite_step}"
        for route in routes
        for failure in route.failures
        if failure.status == "nonfinite" and failure.nonfinite_step is not None
    ]
    unique = list(dict.fromkeys(found))
    return f"loss not finite: {', '.join(unique)}" if unique else None


def _exit_status(repeats: Sequence[RepeatResult], parity: Parity) -> int:
    """0 all finished and agree; 130 interrupted; 3 parity broken; 1 a run did not finish."""
    statuses = {repeat.status for repeat in repeats}
    if "interrupted" in statuses:
        return ExitStatus.INTERRUPTED
    if parity.status == "broken":
        return ExitStatus.PARITY_BROKEN
    if statuses - {"ok"}:
        return ExitStatus.ROUTE_FAILED
    return ExitStatus.OK


def decide_verdict(
    repeats: Iterable[RepeatResult | Mapping[str, Any]],
    *,
    settings: VerdictSettings | None = None,
    load_average: float | None = None,
    cores: int | None = None,
) -> Verdict:
    """Judges the runs of a grade: parity, speed, memory, noise, a summary and an exit status.

    `repeats` are `RepeatResult`s or their dicts, in any order; routes keep
    the order of their first run. `load_average` (the 1-minute figure, read
    when the grade began) and `cores` feed the load warning. The exit status
    is 130 if a run was interrupted, else 3 if parity is broken, else 1 if a
    run failed, timed out or met a non-finite loss, else 0; a baseline
    regression (4) is `compare`'s to decide.
    """
    settings = settings or VerdictSettings()
    runs = [
        repeat if isinstance(repeat, RepeatResult) else RepeatResult.from_dict(repeat)
        for repeat in repeats
    ]
    if not runs:
        raise ValueError("a verdict needs at least one run")
    names = list(dict.fromkeys(run.route for run in runs))
    judged = [
        _judge_route(name, [run for run in runs if run.route == name], settings) for name in names
    ]
    reference = next((route for route in judged if route.route == settings.reference), None)
    routes = tuple(_with_ratios(route, reference, settings) for route in judged)
    parity = check_parity(runs, settings.reference)
    warnings = _noise_warnings(routes, settings, load_average, cores)

    name_repeats = any(route.repeats > 1 for route in routes)
    others = [route for route in routes if reference is None or route.route != reference.route]
    clauses = [_route_clause(route, reference, settings.reference) for route in others]
    if reference is not None and (reference.completed == 0 or not others):
        clauses.insert(0, _route_clause(reference, None, settings.reference))
    elif reference is not None and reference.failures:
        # The ratios stand on the reference's completed runs; say that some did not complete.
        count = len(reference.failures)
        clauses.insert(
            0, f"{reference.route}: {count} of {reference.repeats} repeats {reference.status}"
        )
    clauses.append(_parity_clause(parity, name_repeats))
    nonfinite = _nonfinite_clause(routes)
    if nonfinite:
        clauses.append(nonfinite)
    return Verdict(
        reference=settings.reference,
        settings=settings,
        routes=routes,
        parity=parity,
        warnings=tuple(warnings),
        summary="; ".join(clauses),
        exit_status=_exit_status(runs, parity),
    )

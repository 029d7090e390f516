"""Speed: a route's time per step over its completed runs, and its ratio to the reference."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from topos_cli.report.statistics import (
    RatioEstimate,
    Summary,
    mann_whitney,
    median,
    outlier_indices,
    ratio_estimate_of,
    ratio_of_medians,
    summarize,
)
from topos_cli.result.json_values import optional_json
from topos_cli.result.run_record import RunRecord
from topos_cli.result.verdict_settings import VerdictSettings


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
            "ratio": optional_json(self.ratio),
        }


def measure_speed(runs: Sequence[RunRecord], settings: VerdictSettings) -> Speed | None:
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


def speed_ratio(
    speed: Speed, reference: Speed, settings: VerdictSettings, known: RatioEstimate | None = None
) -> SpeedRatio | None:
    """How this route's speed compares with the reference's; `None` if undefined. `known`
    is the time ratio's estimate as a result stored it (see `ratio_of_medians`)."""
    mine = _flatten(speed.step_seconds)
    theirs = _flatten(reference.step_seconds)
    try:
        estimate = ratio_of_medians(
            mine,
            theirs,
            resamples=settings.bootstrap_resamples,
            confidence=settings.confidence,
            known=known,
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


def stored_time_ratio(route: Mapping[str, Any]) -> tuple[str, RatioEstimate] | None:
    """The time-ratio estimate a stored verdict's route holds (`RouteVerdict`'s JSON, as
    `SpeedRatio.to_json` wrote it), with the route's name; None when it holds none."""
    speed = route.get("speed")
    ratio = speed.get("ratio") if isinstance(speed, Mapping) else None
    estimate = ratio_estimate_of(ratio.get("time_ratio")) if isinstance(ratio, Mapping) else None
    name = route.get("route")
    return None if estimate is None or not isinstance(name, str) else (name, estimate)

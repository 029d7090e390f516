"""Speed: a route's time per step over its completed runs, and its ratio to the reference."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from topos_cli.judge.statistics import (
    RatioEstimate,
    Summary,
    median,
    outlier_indices,
    summarize,
)
from topos_cli.judge.step_screening import screen_side
from topos_cli.judge.time_judgement import (
    FASTER,
    INCONCLUSIVE,
    NO_CLEAR,
    SLOWER,
    WITHIN,
    TimeJudgement,
    judge_time,
)
from topos_cli.result.judged_figure import figure
from topos_cli.result.repeat import Repeat
from topos_cli.result.speed_record import SpeedRatioRecord, SpeedRecord
from topos_cli.result.verdict_settings import VerdictSettings


@dataclass(frozen=True)
class SpeedRatio:
    """A route's speed relative to the reference, as `time_judgement` judges it.

    `factor` is at least 1: how many times faster (reference time over this route's)
    or slower. `direction` is `faster` or `slower` only for a claim (enough quiet
    repeats, a significant test, an interval beyond the tolerance), `same` within the
    tolerance, else `unclear` (no clear difference) or `inconclusive` (too few repeats
    or too disturbed steps). `time_ratio` is this route's time over the reference's
    with its hierarchical-bootstrap interval; `judgement` says what it rests on.
    """

    factor: float
    direction: str
    uncertainty: float
    time_ratio: RatioEstimate
    p_value: float | None
    significant: bool | None
    tentative: bool
    judgement: TimeJudgement | None = None

    @property
    def phrase(self) -> str:
        """E.g. `1.12 ± 0.03x faster`, `1.00 ± 0.01x the speed`, `0.96x the time, no clear
        difference`, `inconclusive (0.86x the time)`."""
        ratio = self.time_ratio.ratio
        if self.direction == "inconclusive":
            return f"inconclusive ({ratio:.2f}x the time)"
        if self.direction == "unclear":
            return f"~{ratio:.2f}x the time, no clear difference"
        wording = "the speed" if self.direction == "same" else self.direction
        return f"{self.factor:.2f} ± {self.uncertainty:.2f}x {wording}"

    def record(self) -> SpeedRatioRecord:
        """The ratio as a verdict keeps it, with its phrase and judgement."""
        return SpeedRatioRecord(
            factor=self.factor,
            direction=self.direction,
            uncertainty=figure(self.uncertainty),
            time_ratio=self.time_ratio.record(),
            p_value=self.p_value,
            significant=self.significant,
            tentative=self.tentative,
            phrase=self.phrase,
            judgement=None if self.judgement is None else self.judgement.record(),
        )


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
    #: Raw per-step times in seconds, one tuple per completed repeat (read by the time judgement).
    step_seconds: tuple[tuple[float, ...], ...] = field(repr=False, default=())
    #: The route's CPU ms per undisturbed step (median of its repeats'), None if unknown.
    cpu_milliseconds_per_step: float | None = None
    #: Measured steps judged disturbed (`time_judgement`), None when unknown.
    disturbed_steps: int | None = None
    #: What showed those steps lost the CPU (`SideEvidence.evidence`), None if none did.
    disturbance_evidence: str | None = None
    #: What the machine readings said of other processes meanwhile (context, not a
    #: disturbance: `SideEvidence.machine_note`), None when they said nothing.
    machine_note: str | None = None
    #: The completed repeats, for `time_judgement`.
    repeats: tuple[Repeat, ...] = field(repr=False, default=())

    def record(self) -> SpeedRecord:
        """The speed as a verdict keeps it (raw step times live in the repeats, not here)."""
        return SpeedRecord(
            milliseconds_per_step=self.milliseconds_per_step.record(),
            cpu_milliseconds_per_step=self.cpu_milliseconds_per_step,
            disturbed_steps=self.disturbed_steps,
            disturbance_evidence=self.disturbance_evidence,
            machine_note=self.machine_note,
            repeat_medians_milliseconds=list(self.repeat_medians_milliseconds),
            repeat_minimum_milliseconds=min(self.repeat_medians_milliseconds),
            repeat_maximum_milliseconds=max(self.repeat_medians_milliseconds),
            first_step_milliseconds=self.first_step_milliseconds,
            excluded_steps=self.excluded_steps,
            outliers=self.outliers,
            ratio=None if self.ratio is None else self.ratio.record(),
        )


def measure_speed(repeats: Sequence[Repeat], settings: VerdictSettings) -> Speed | None:
    """A route's step-time summary over its completed runs; `None` if none timed a step."""
    timed = [repeat for repeat in repeats if repeat.step_seconds]
    if not timed:
        return None
    per_run = tuple(run.measured_step_seconds(settings.warmup_steps) for run in timed)
    pooled = [seconds * 1000.0 for seconds in _flatten(per_run)]
    first_steps = [run.first_step_seconds for run in timed if run.first_step_seconds is not None]
    evidence = screen_side(timed, settings.warmup_steps)
    return Speed(
        milliseconds_per_step=summarize(pooled),
        repeat_medians_milliseconds=tuple(median(seconds) * 1000.0 for seconds in per_run),
        first_step_milliseconds=median(first_steps) * 1000.0 if first_steps else None,
        excluded_steps=sum(len(run.step_seconds) for run in timed) - len(pooled),
        # Outliers are judged within each run, so a shift between runs is not counted as one.
        outliers=sum(len(outlier_indices(seconds, settings.outlier_fence)) for seconds in per_run),
        ratio=None,
        step_seconds=per_run,
        cpu_milliseconds_per_step=evidence.cpu_milliseconds,
        disturbed_steps=evidence.disturbed,
        disturbance_evidence=evidence.evidence,
        machine_note=evidence.machine_note,
        repeats=tuple(timed),
    )


def _flatten(groups: Iterable[Sequence[float]]) -> list[float]:
    """The values of every group, in order, in one list."""
    return [value for group in groups for value in group]


def speed_ratio(
    speed: Speed, reference: Speed, settings: VerdictSettings, known: RatioEstimate | None = None
) -> SpeedRatio | None:
    """How this route's speed compares with the reference's, by `time_judgement`; `None`
    if undefined. (`known`, a stored estimate, is no longer used: the hierarchical
    bootstrap is cheap.)"""
    judgement = judge_time(
        speed.repeats,
        reference.repeats,
        tolerance=settings.speed_tolerance,
        significance_level=settings.significance_level,
        new_warmup=settings.warmup_steps,
        old_warmup=settings.warmup_steps,
        names=("this route", "the reference"),
        resamples=settings.bootstrap_resamples,
        confidence=settings.confidence,
    )
    ratio, lower, upper = judgement.ratio, judgement.lower, judgement.upper
    if ratio is None or ratio == 0.0 or lower is None or upper is None:
        return None
    estimate = RatioEstimate(
        ratio,
        lower,
        upper,
        max(ratio - lower, upper - ratio),
        judgement.confidence,
        judgement.resamples,
    )
    if ratio <= 1.0:
        factor = 1.0 / ratio
        # The interval of the reciprocal is the reciprocal of the interval.
        low = 1.0 / upper
        high = math.inf if lower == 0.0 else 1.0 / lower
        uncertainty = max(factor - low, high - factor)
    else:
        factor, uncertainty = ratio, estimate.uncertainty
    direction = {
        SLOWER: "slower",
        FASTER: "faster",
        WITHIN: "same",
        NO_CLEAR: "unclear",
        INCONCLUSIVE: "inconclusive",
    }[judgement.outcome]
    return SpeedRatio(
        factor=factor,
        direction=direction,
        uncertainty=uncertainty,
        time_ratio=estimate,
        p_value=judgement.p_value,
        significant=None if judgement.p_value is None else judgement.claim,
        tentative=direction == "unclear",
        judgement=judgement,
    )

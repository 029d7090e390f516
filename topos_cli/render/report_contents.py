"""What the report of one grade shows, gathered from its result: every repeat's series, the
memory plan, the verdict, the circumstances, and what is missing.

Pure Python (no NumPy, no plotting), so the figures and the page are drawn
from one gathered object, and tests can check it against the JSON directly.
The verdict is the record the result stored (`stored_or_judged`: judged again from
the raw runs, with the result's own settings, only for a result that lacks one); the
stored summary sentence is shown as the grade said it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from topos_cli.judge.stored_verdict import stored_or_judged
from topos_cli.render.result_description import (
    describe_data,
    describe_host,
    describe_outcome,
    describe_predictions,
    describe_settings,
)
from topos_cli.result.divergence_record import DivergenceRecord
from topos_cli.result.grade_result import GradeResult, JudgedVerdict
from topos_cli.result.lenient_result import LenientResult
from topos_cli.result.repeat import Repeat
from topos_cli.result.repeat_label import repeat_label
from topos_cli.result.verdict_settings import VerdictSettings
from topos_cli.result.worker_facts import LiveVolume


@dataclass(frozen=True)
class RepeatSeries:
    """One repeat of one route (one worker's measured series, `result.repeat`) as the
    pictures draw it; times in seconds, memory in bytes."""

    route: str
    repeat: int
    status: str
    #: How the repeat is named on a legend: the route, and its number when there are several.
    label: str
    detail: str | None
    #: The RSS timeline: the start of each slice, in seconds since the worker was ready
    #: (since it started, when it never got ready), and the highest RSS in the slice.
    rss_seconds: tuple[float, ...]
    rss_bytes: tuple[int, ...]
    #: Seconds from the worker's start to its ready point, if it got there.
    ready_after_seconds: float | None
    ready_rss_bytes: int | None
    peak_rss_bytes: int | None
    training_delta_bytes: int | None
    step_milliseconds: tuple[float, ...]
    #: The warm-up step run and thrown away before ready (its time only).
    warm_up_milliseconds: float | None
    losses: tuple[float, ...]


@dataclass(frozen=True)
class ReportContents:
    """Everything one grade's report shows, and what it could not show."""

    source: str
    result: GradeResult
    workload: str
    routes: tuple[str, ...]
    repeats: tuple[RepeatSeries, ...]
    #: Per route, the plan's predicted training bytes (its planned live volume and more).
    predicted_training_bytes: Mapping[str, int]
    verdict: JudgedVerdict | None
    #: The sentence the grade printed (or the recomputed one, for a result without it).
    summary: str | None
    divergence: DivergenceRecord | None
    #: Leading measured steps the verdict leaves out of its median.
    warmup_steps: int
    #: Lines said beside the table: outcome, data, memory prediction, host, settings.
    circumstances: tuple[str, ...]
    missing: tuple[str, ...] = field(default_factory=tuple)

    @property
    def peak_sampled(self) -> bool:
        """Whether a completed run's peak was sampled rather than read from the kernel's
        high-water mark (no /proc: macOS), so the peak is coarser, not exact."""
        return any(
            repeat.status == "ok" and repeat.facts.peak_source == "sampling"
            for repeat in self.result.repeats
        )

    @property
    def peak_words(self) -> str:
        """How the measured peak was measured, as a legend and a caption say it."""
        return "sampled, not exact: no /proc" if self.peak_sampled else "VmHWM"

    def repeats_of(self, route: str) -> list[RepeatSeries]:
        """The repeats of `route`, in the order they ran."""
        return [repeat for repeat in self.repeats if repeat.route == route]

    def predicted_peak_bytes(self, repeat: RepeatSeries) -> int | None:
        """Where the plan says the repeat's RSS should top out: its ready RSS plus the
        predicted training bytes of its route."""
        predicted = self.predicted_training_bytes.get(repeat.route)
        if predicted is None or repeat.ready_rss_bytes is None:
            return None
        return repeat.ready_rss_bytes + predicted


def _timeline(
    repeat: Repeat, ready_after: float | None
) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """A repeat's RSS timeline as (seconds since ready, bytes); empty when it has none."""
    timeline = repeat.facts.rss_timeline
    if timeline is None or not timeline.points or not timeline.resolution_seconds:
        return (), ()
    offset = ready_after or 0.0
    resolution = timeline.resolution_seconds
    seconds = tuple(index * resolution - offset for index in range(len(timeline.points)))
    return seconds, tuple(timeline.points)


def _warm_up_milliseconds(repeat: Repeat) -> float | None:
    """The time of the step thrown away before ready, in ms, if the worker said it."""
    ready = repeat.facts.ready
    seconds = None if ready is None else ready.warm_up_seconds
    return None if seconds is None else seconds * 1000.0


def _series(repeat: Repeat, name_repeats: bool) -> RepeatSeries:
    """The pictures' view of one repeat."""
    ready_after = repeat.facts.ready_after_seconds
    seconds, values = _timeline(repeat, ready_after)
    return RepeatSeries(
        route=repeat.route,
        repeat=repeat.repeat,
        status=repeat.status,
        label=repeat_label(repeat.route, repeat.repeat, name_repeats),
        detail=repeat.detail,
        rss_seconds=seconds,
        rss_bytes=values,
        ready_after_seconds=ready_after,
        ready_rss_bytes=repeat.ready_rss_bytes,
        peak_rss_bytes=repeat.peak_rss_bytes,
        training_delta_bytes=repeat.training_delta_bytes,
        step_milliseconds=tuple(value * 1000.0 for value in repeat.step_seconds),
        warm_up_milliseconds=_warm_up_milliseconds(repeat),
        losses=repeat.losses,
    )


def _predictions(result: GradeResult) -> dict[str, int]:
    """Per route, the predicted training bytes: from `memory_prediction`, else the route's
    live volume as its worker reported it at ready."""
    predicted: dict[str, int] = {}
    for entry in result.memory_prediction:
        value = entry.predicted_training_bytes
        value = entry.predicted_live_bytes if value is None else value
        if value is not None:
            predicted[entry.route] = value
    for route, facts in result.routes.items():
        volume = facts.live_volume or LiveVolume()
        value = volume.predicted_training_bytes
        value = volume.peak_bytes if value is None else value
        if route not in predicted and value is not None:
            predicted[route] = value
    return predicted


def _verdict_settings(result: GradeResult) -> VerdictSettings:
    """The verdict settings the result was judged with, else the defaults."""
    return VerdictSettings() if result.verdict is None else result.verdict.settings


def _data_line(result: GradeResult) -> str:
    """The terminal's `data:` line."""
    if result.workload.data is None:
        return "data: not recorded"
    return describe_data(result.workload.data)


def _missing_parts(
    result: GradeResult, repeats: Sequence[Repeat], series: Sequence[RepeatSeries]
) -> list[str]:
    """What the report cannot draw, repeat by repeat, in words."""
    missing = []
    if not repeats:
        missing.append("no run of any route was recorded: there is nothing to draw")
    for repeat, drawn in zip(repeats, series, strict=True):
        if repeat.status != "ok":
            detail = (repeat.detail or "").strip().splitlines()
            missing.append(
                f"{drawn.label} {repeat.status}"
                + (f": {detail[-1]}" if detail else "")
                + f" (drawn as far as it got: {len(repeat.loss_bits)} steps)"
            )
        if not drawn.rss_bytes:
            missing.append(f"{drawn.label}: no RSS timeline; memory is marked, not drawn over time")
        if not repeat.step_seconds:
            missing.append(f"{drawn.label}: no step times")
        if not repeat.loss_bits:
            missing.append(f"{drawn.label}: no losses")
    if repeats and not result.memory_prediction and not result.routes:
        missing.append("no memory prediction: the predicted peak is not marked")
    if repeats and result.verdict is None:
        missing.append("no stored verdict: the table is recomputed from the runs")
    return missing


def gather_report_contents(lenient: LenientResult) -> ReportContents:
    """Gathers what the report of the result in `lenient` shows."""
    result = lenient.result
    missing = list(lenient.missing)
    repeats = list(result.repeats)
    routes = tuple(dict.fromkeys(repeat.route for repeat in repeats))
    name_repeats = any(repeat.repeat > 0 for repeat in repeats)
    series = tuple(_series(repeat, name_repeats) for repeat in repeats)
    missing += _missing_parts(result, repeats, series)
    verdict = stored_or_judged(result, missing)
    summary = None if result.verdict is None else result.verdict.summary
    if summary is None and verdict is not None:
        summary = verdict.summary
    circumstances = [
        describe_outcome(result),
        _data_line(result),
        *describe_predictions(result.memory_prediction),
        describe_host(result),
        describe_settings(result),
    ]
    if result.error is not None:
        circumstances.append(f"error: {result.error}")
    if result.interrupted is not None:
        circumstances.append(f"interrupted by {result.interrupted.signal}")
    return ReportContents(
        source=lenient.source,
        result=result,
        workload=result.workload.name,
        routes=routes,
        repeats=series,
        predicted_training_bytes=_predictions(result),
        verdict=verdict,
        summary=summary,
        divergence=None if verdict is None or verdict.parity is None else verdict.parity.divergence,
        warmup_steps=_verdict_settings(result).warmup_steps,
        circumstances=tuple(circumstances),
        missing=tuple(missing),
    )

"""Compares two grade results of one workload and flags regressions beyond tolerances.

For each route in both results, three figures: the median ms/step, the peak
RSS and the training delta; a native route (a PyTorch or JAX step) also its step
tensors, its memory where RSS sees only the heap's growth (exact, so no floor applies).
A figure *regresses* when the new value exceeds the old by more than its tolerance
(default 10% for time, 5% for memory) and the difference is significant where repeats
allow:

- time: judged by `time_judgement`, as every judgement of time is: the repeats are
  the evidence (not the steps), disturbed steps are left out, and a regression or
  improvement is claimed only from enough quiet repeats whose interval lies beyond
  the tolerance and whose test is significant; too few repeats or too disturbed
  steps (or, for a result without CPU times, a busy-machine warning) make it
  *inconclusive*, exit 5 unless something worse applies;
- memory: with two or more repeats on both sides, the ranges across repeats
  must not overlap (memory figures are nearly deterministic, so a rank test
  over two or three values could never reach significance anyway). A change
  smaller than `memory_floor_bytes` in absolute terms never counts: 5% of a
  2 MiB training delta is allocator noise, not a regression.

Figures are recomputed from the raw repeats, not read from the stored
verdicts, so both sides are measured the same way. Results graded at different
settings (workload, steps, data fingerprint, shards) are refused (exit 2), as
`history` never mixes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from topos_cli.judge.comparable_results import check_comparable, setting_notes
from topos_cli.judge.count_judgement import (
    BLIND_SPOTS,
    CountChange,
    clock_disagreement,
    judge_counts,
)
from topos_cli.judge.figure_change import FigureChange
from topos_cli.judge.regression_summary import MemoryFinding, no_regression_sentence
from topos_cli.judge.statistics import median
from topos_cli.judge.time_judgement import FASTER, INCONCLUSIVE, SLOWER, judge_time
from topos_cli.result.comparison_record import ComparisonRecord
from topos_cli.result.grade_result import GradeResult
from topos_cli.result.repeat import Repeat
from topos_cli.result.tolerance import CompareSettings
from topos_cli.shared.exit_status import ExitStatus, most_severe

#: The figures compared per route, in the order they are shown.
FIGURES = ("ms/step", "peak RSS", "training delta")

#: A native route's figure beside them, where its runs measured it.
STEP_TENSORS = "step tensors"

#: The statuses of a significant change: past the tolerance, and not noise.
SIGNIFICANT = ("regression", "improvement")


@dataclass(frozen=True)
class Comparison:
    """What changed between two results of one workload, figure by figure."""

    workload: str
    settings: CompareSettings
    changes: tuple[FigureChange, ...]
    #: Differences between the two grades that may explain a change (steps, data, host...).
    notes: tuple[str, ...]
    #: What did not finish in the new result: a route with a failed run, or with no runs.
    failures: tuple[str, ...] = ()
    #: Each route's counted work, old against new, where both results counted it.
    count_changes: tuple[CountChange, ...] = ()

    @property
    def regressions(self) -> tuple[FigureChange, ...]:
        """The figures that regressed."""
        return tuple(change for change in self.changes if change.status == "regression")

    @property
    def inconclusive(self) -> tuple[FigureChange, ...]:
        """The figures whose evidence was too thin or too disturbed to judge (a time its
        route's counts decided is not among them)."""
        decided = {change.route for change in self.count_changes if change.decided}
        return tuple(
            change
            for change in self.changes
            if change.status == INCONCLUSIVE and not (change.time and change.route in decided)
        )

    @property
    def counted_regressions(self) -> tuple[CountChange, ...]:
        """The routes whose counted work per step regressed beyond its tolerance."""
        return tuple(change for change in self.count_changes if change.status == "regression")

    @property
    def exit_status(self) -> int:
        """1 when a route of the new result did not finish (never "no regression"), else 4
        when any figure regressed, else 5 when a time judgement was inconclusive, else 0."""
        return most_severe(
            (
                ExitStatus.ROUTE_FAILED if self.failures else None,
                ExitStatus.REGRESSION if self.regressions or self.counted_regressions else None,
                ExitStatus.INCONCLUSIVE if self.inconclusive else None,
            )
        )

    @property
    def counts_clause(self) -> str:
        """`; instructions: engine no change in instructions (+0.01%, within ±1%)`, or
        empty where neither result counted."""
        if not self.count_changes:
            return ""
        return "; instructions: " + "; ".join(
            f"{change.route} {change.phrase()}" for change in self.count_changes
        )

    @property
    def count_notes(self) -> tuple[str, ...]:
        """Where counts were compared: each route whose conclusive clock disagrees with
        its counts (both named), then what counts cannot see, in one line."""
        if not self.count_changes:
            return ()
        counts = {change.route: change for change in self.count_changes}
        disagreements = (
            clock_disagreement(change.route, change.time.outcome, counts.get(change.route))
            for change in self.changes
            if change.time is not None
        )
        return (*(line for line in disagreements if line), BLIND_SPOTS)

    @property
    def summary(self) -> str:
        """One sentence: what did not finish, the regressions, or what the judgements
        allow (`regression_summary`: "no regression beyond 10% on time" only when every
        route's interval lies within it at its upper end, else what it allows)."""
        if self.failures:
            return f"{self.workload}: {'; '.join(self.failures)}"
        if not self.regressions:
            times = [
                (change.route, change.time) for change in self.changes if change.time is not None
            ]
            memory = [
                MemoryFinding(change.route, change.figure, change.change, change.status)
                for change in self.changes
                if change.time is None
            ]
            sentence = no_regression_sentence(
                times, memory, self.settings.time_tolerance, self.settings.memory_tolerance
            )
            if self.counted_regressions:
                sentence = "instructions regressed"
            return f"{self.workload}: {sentence}{self.counts_clause}"
        named = ", ".join(
            f"{change.route} {change.figure} {change.change:+.1%}" for change in self.regressions
        )
        count = len(self.regressions)
        plural = "s" if count > 1 else ""
        return f"{self.workload}: {count} regression{plural} ({named}){self.counts_clause}"

    def record(self) -> ComparisonRecord:
        """The comparison as a result keeps it, with its sentence and exit status."""
        return ComparisonRecord(
            workload=self.workload,
            summary=self.summary,
            exit_status=int(self.exit_status),
            changes=[change.record() for change in self.changes],
            counts=[change.record() for change in self.count_changes],
            notes=list(self.notes),
            count_notes=list(self.count_notes),
            failures=list(self.failures),
            settings=self.settings,
        )


def _warmup_steps(result: GradeResult) -> int:
    """How many leading steps the result's own verdict left out of its median (default 1)."""
    return 1 if result.verdict is None else result.verdict.settings.warmup_steps


def _completed(repeats: Sequence[Repeat], route: str) -> list[Repeat]:
    """The runs of `route` that finished cleanly."""
    return [repeat for repeat in repeats if repeat.route == route and repeat.status == "ok"]


def _relative_change(old: float | None, new: float | None) -> float | None:
    """`new / old - 1`, or `None` when undefined."""
    if old is None or new is None or old <= 0:
        return None
    return new / old - 1.0


def _classify(change: float | None, tolerance: float, significant: bool | None) -> str:
    """The status of a figure from its relative change and whether it is significant."""
    if change is None:
        return "missing"
    if abs(change) <= tolerance:
        return "within tolerance"
    if significant is False:
        return "not significant"
    return "regression" if change > 0 else "improvement"


def _judged_change(
    route: str,
    figure: str,
    unit: str,
    old: float | None,
    new: float | None,
    tolerance: float,
    significant: bool | None,
    p_value: float | None = None,
    floor: float = 0.0,
) -> FigureChange:
    """One figure's change, classified against `tolerance`; a change of less than `floor`
    (in the figure's unit) is within tolerance whatever its ratio."""
    change = _relative_change(old, new)
    status = _classify(change, tolerance, significant)
    if status in (*SIGNIFICANT, "not significant") and abs(new - old) < floor:
        status = "within tolerance"  # a classified change has both figures
    return FigureChange(
        route=route,
        figure=figure,
        unit=unit,
        old=old,
        new=new,
        change=change,
        tolerance=tolerance,
        p_value=p_value,
        significant=significant,
        status=status,
    )


def _busy_warning(result: GradeResult) -> str | None:
    """The grade's own busy-machine warning (its verdict's `load` warning), if any."""
    for warning in () if result.verdict is None else result.verdict.warnings:
        if warning.kind == "load":
            return warning.message or "the machine was busy"
    return None


def _compare_time(
    route: str,
    old_runs: Sequence[Repeat],
    new_runs: Sequence[Repeat],
    old_warmup: int,
    new_warmup: int,
    settings: CompareSettings,
    busy: tuple[str | None, str | None] = (None, None),
    sources: tuple[str, str] = ("old", "new"),
) -> FigureChange:
    """The change in ms/step of one route, judged by `time_judgement` (repeats as the
    evidence, disturbed steps left out, inconclusive when thin or disturbed)."""
    judgement = judge_time(
        new_runs,
        old_runs,
        tolerance=settings.time_tolerance,
        significance_level=settings.significance_level,
        new_warmup=new_warmup,
        old_warmup=old_warmup,
        new_busy=busy[1],
        old_busy=busy[0],
        names=(sources[1], sources[0]),
    )
    # With nothing usable left (every step disturbed), what was measured is still shown.
    old = judgement.old.milliseconds or judgement.old.all_milliseconds
    new = judgement.new.milliseconds or judgement.new.all_milliseconds
    status = {SLOWER: "regression", FASTER: "improvement"}.get(judgement.outcome, judgement.outcome)
    if old is None or new is None:
        status = "missing"
    return FigureChange(
        route=route,
        figure="ms/step",
        unit="ms",
        old=old,
        new=new,
        change=_relative_change(old, new),
        tolerance=settings.time_tolerance,
        p_value=judgement.p_value,
        significant=None if judgement.p_value is None else judgement.claim,
        status=status,
        time=judgement,
    )


def _compare_memory(
    route: str,
    figure: str,
    old_values: Sequence[int],
    new_values: Sequence[int],
    settings: CompareSettings,
    floor: int | None = None,
) -> FigureChange:
    """The change in one memory figure of one route, judged by range overlap where repeats
    allow; a change below `floor` bytes (the settings' memory floor by default) never counts."""
    old = float(median(old_values)) if old_values else None
    new = float(median(new_values)) if new_values else None
    change = _relative_change(old, new)
    significant = None
    if len(old_values) >= 2 and len(new_values) >= 2 and change is not None:
        if change > 0:
            significant = min(new_values) > max(old_values)
        else:
            significant = max(new_values) < min(old_values)
    return _judged_change(
        route,
        figure,
        "bytes",
        old,
        new,
        settings.memory_tolerance,
        significant,
        floor=settings.memory_floor_bytes if floor is None else floor,
    )


def compare_results(
    old: GradeResult,
    new: GradeResult,
    *,
    settings: CompareSettings | None = None,
    old_source: str = "the old result",
    new_source: str = "the new result",
) -> Comparison:
    """Compares two results of one workload, route by route and figure by figure.

    Raises `IncomparableResultsError` when their workloads differ (exit 2, one line
    naming the sources).
    """
    settings = settings or CompareSettings()
    check_comparable(old, new, old_source, new_source)
    new_workload = new.workload.name
    old_runs, new_runs = old.repeats, new.repeats
    old_routes = list(dict.fromkeys(run.route for run in old_runs))
    new_routes = list(dict.fromkeys(run.route for run in new_runs))
    notes = setting_notes(old, new)
    for route in old_routes:
        if route not in new_routes:
            notes.append(f"route {route} is only in {old_source}")
    for route in new_routes:
        if route not in old_routes:
            notes.append(f"route {route} is only in {new_source}")
    failures = _failures(old_routes, new_runs, new_source)
    changes = []
    for route in (route for route in old_routes if route in new_routes):
        old_completed, new_completed = _completed(old_runs, route), _completed(new_runs, route)
        for source, completed in ((old_source, old_completed), (new_source, new_completed)):
            if not completed:
                notes.append(f"route {route} did not complete in {source}")
        changes.append(
            _compare_time(
                route,
                old_completed,
                new_completed,
                _warmup_steps(old),
                _warmup_steps(new),
                settings,
                busy=(_busy_warning(old), _busy_warning(new)),
                sources=(old_source, new_source),
            )
        )
        for figure, attribute in (
            ("peak RSS", "peak_rss_bytes"),
            ("training delta", "training_delta_bytes"),
        ):
            changes.append(
                _compare_memory(
                    route,
                    figure,
                    [v for run in old_completed if (v := getattr(run, attribute)) is not None],
                    [v for run in new_completed if (v := getattr(run, attribute)) is not None],
                    settings,
                )
            )
        old_tensors = [v for run in old_completed if (v := run.step_tensor_bytes) is not None]
        new_tensors = [v for run in new_completed if (v := run.step_tensor_bytes) is not None]
        if old_tensors or new_tensors:
            # Counted by the framework, not sampled from RSS: no allocator noise to forgive.
            changes.append(
                _compare_memory(route, STEP_TENSORS, old_tensors, new_tensors, settings, floor=0)
            )
    old_counts = {count.route: count for count in old.counts or ()}
    new_counts = {count.route: count for count in new.counts or ()}
    count_changes = tuple(
        judge_counts(route, old_counts.get(route), new_counts.get(route))
        for route in old_routes
        if route in new_routes and (route in old_counts or route in new_counts)
    )
    return Comparison(
        workload=new_workload,
        settings=settings,
        changes=tuple(changes),
        notes=tuple(notes),
        failures=tuple(failures),
        count_changes=count_changes,
    )


def _failures(old_routes: Sequence[str], new_runs: Sequence[Repeat], new_source: str) -> list[str]:
    """What did not finish in the new result: its routes with a run that is not ok, and the
    old result's routes it has no run of. A failed route is never "no regression"."""
    new_routes = list(dict.fromkeys(run.route for run in new_runs))
    failures = []
    for route in new_routes:
        statuses = [run.status for run in new_runs if run.route == route]
        bad = sorted({status for status in statuses if status != "ok"})
        if bad:
            failures.append(
                f"route {route} did not finish in {new_source} "
                f"({', '.join(bad)}: {sum(status != 'ok' for status in statuses)} of "
                f"{len(statuses)} runs)"
            )
    for route in old_routes:
        if route not in new_routes:
            failures.append(f"route {route} has no run in {new_source}")
    if not new_runs and not old_routes:
        failures.append(f"{new_source} has no runs")
    return failures

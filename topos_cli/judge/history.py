"""The history of a workload: many grade results, ordered by time, grouped by host and
settings, each figure's change against the grade before it judged as `compare` judges it.

Figures measured on different machines or at different settings (steps,
threads, data, the BLAS and its environment, shards) are not comparable, so
they are never drawn on one line: each combination is a group of its own,
and the output says how the groups differ. Within a group, a point is marked
where `compare_results` calls its change from the previous point a
significant regression or improvement.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from topos_cli.judge.compare import (
    FIGURES,
    SIGNIFICANT,
    STEP_TENSORS,
    FigureChange,
    compare_results,
)
from topos_cli.judge.count_judgement import CountChange
from topos_cli.judge.history_files import loaded_results, result_files
from topos_cli.judge.machine import MACHINE_FACTS, machine_facts, machine_name, machine_slug
from topos_cli.result.data_facts import DataFacts
from topos_cli.result.grade_result import GradeResult
from topos_cli.result.repeat import Repeat
from topos_cli.result.result_commit import describe_commit
from topos_cli.result.tolerance import CompareSettings
from topos_cli.shared.errors import ToposError, ToposUsageError

#: The counted figure of a history (`grade --measure instructions`): the median
#: instructions per judged step. A trend of it is flat where the code did not change.
COUNTED = "instructions/step"


@dataclass(frozen=True)
class HistoryPoint:
    """One grade in a history: when, which commit, and its figures per route."""

    source: str
    created: str
    commit: str
    status: str
    #: `(route, figure) -> value`, figure one of `compare.FIGURES` (ms, or bytes).
    values: Mapping[tuple[str, str], float | None]
    #: `(route, figure) -> change` against the previous point of the group (none for the first).
    changes: Mapping[tuple[str, str], FigureChange] = field(default_factory=dict)
    #: `(route, figure) -> (lowest, highest)`: the spread behind the value (`figure_spreads`).
    spreads: Mapping[tuple[str, str], tuple[float, float]] = field(default_factory=dict)
    #: The grade's own verdict in one sentence (against `--against`'s checkout when it had
    #: one), and its exit status.
    verdict: str | None = None
    exit_status: int | None = None
    #: The result itself, so a site can draw its report (even from inside an archive).
    result: GradeResult | None = field(default=None, compare=False, repr=False)

    def significant(self, route: str, figure: str) -> str | None:
        """`regression` or `improvement` if `compare` calls this figure's change so."""
        change = self.changes.get((route, figure))
        return change.status if change is not None and change.status in SIGNIFICANT else None


@dataclass(frozen=True)
class HistoryGroup:
    """The grades of one workload on one host at one set of settings, oldest first."""

    workload: str
    #: The facts every grade of the group shares, as `(name, value)` pairs.
    key: tuple[tuple[str, str], ...]
    points: tuple[HistoryPoint, ...]

    @property
    def machine(self) -> tuple[tuple[str, str], ...]:
        """The facts of the key that name the machine (`machine.MACHINE_FACTS`)."""
        return tuple((name, value) for name, value in self.key if name in MACHINE_FACTS)

    @property
    def machine_name(self) -> str:
        """The machine in one line (`machine.machine_name`)."""
        return machine_name(self.machine)

    @property
    def machine_slug(self) -> str:
        """The machine's short name for a path (`machine.machine_slug`)."""
        return machine_slug(self.machine)

    @property
    def host(self) -> str:
        """E.g. `host: Intel Xeon (x86_64; avx2 fma), 2 (2 available) cores, Ubuntu 24.04,
        scipy-openblas 0.3.31 (running openblas 0.3.31 Haswell), NumPy 2.4.6, Python 3.12.4;
        environment none set; shards engine 1`."""
        facts = dict(self.key)
        return (
            f"host: {self.machine_name}; environment {facts['environment']}; "
            f"shards {facts['shards']}"
        )

    def measured(self, figure: str) -> bool:
        """Whether any grade of the group has a value of `figure` for some route."""
        return any(
            name == figure and value is not None
            for point in self.points
            for (_, name), value in point.values.items()
        )

    @property
    def counted(self) -> bool:
        """Whether any grade of the group counted its work (`--measure instructions`)."""
        return self.measured(COUNTED)

    @property
    def step_tensors(self) -> bool:
        """Whether any grade of the group is a native step's with its step tensors measured."""
        return self.measured(STEP_TENSORS)

    @property
    def figures(self) -> tuple[str, ...]:
        """The figures the group's trend and table show: a native step's step tensors
        where measured, the counted one where counted."""
        figures = (*FIGURES, STEP_TENSORS) if self.step_tensors else FIGURES
        return (*figures, COUNTED) if self.counted else figures

    @property
    def routes(self) -> tuple[str, ...]:
        """Every route graded in the group, in order of first appearance."""
        return tuple(dict.fromkeys(route for point in self.points for route, _ in point.values))

    @property
    def title(self) -> str:
        """E.g. `cifar10 · 300 steps, threads default, data synthetic 8bc00cf64ce4`."""
        settings = dict(self.key)
        parts = [
            f"{settings.get('steps')} steps",
            f"threads {settings.get('threads')}",
            f"data {settings.get('data')}",
        ]
        return f"{self.workload} · " + ", ".join(parts)


@dataclass(frozen=True)
class History:
    """Every group found, and every file that was passed over, with the reason."""

    groups: tuple[HistoryGroup, ...]
    skipped: tuple[str, ...]

    @property
    def grouping_note(self) -> str | None:
        """When there are several groups, a sentence saying what sets them apart."""
        if len(self.groups) < 2:
            return None
        names = [dict(group.key) for group in self.groups]
        differing = sorted(
            {name for key in names for name in key if len({k.get(name) for k in names}) > 1}
        )
        return (
            f"{len(self.groups)} groups, drawn apart and never mixed: the results differ in "
            f"{', '.join(differing)}"
        )


def grouping_key(result: GradeResult) -> tuple[tuple[str, str], ...]:
    """What must be equal for two grades' figures to be compared: the project (its
    repository: two projects' grades are never one trend), workload, machine
    (`machine.machine_facts`: CPU and its extensions, cores, OS, BLAS and its kernel, NumPy,
    Python), settings."""
    settings = result.settings
    data = result.workload.data or DataFacts()
    shards = sorted(f"{route} {facts.shards}" for route, facts in result.routes.items())
    threads = settings.threads
    fingerprint = str(data.fingerprint or "")[:12]
    source = data.source if data.source is not None else settings.data
    project = result.project
    return (
        ("project", project.repository or "" if project is not None else "not recorded"),
        ("workload", result.workload.name),
        *machine_facts(result),
        ("steps", str(result.steps)),
        ("threads", "default" if threads is None else str(threads)),
        ("data", f"{source} {fingerprint}".strip()),
        (
            "environment",
            ", ".join(
                f"{name}={value}" for name, value in sorted(settings.environment.items()) if value
            )
            or "none set",
        ),
        ("shards", ", ".join(shards) or "unknown"),
    )


def figure_values(result: GradeResult) -> dict[tuple[str, str], float | None]:
    """Per route and figure, the value `compare` reads from a result's raw runs (median
    ms/step over measured steps, median peak RSS, training delta and a native run's step
    tensors over completed runs),
    and where the grade counted its work, the median instructions per judged step."""
    itself = compare_results(result, result)
    values = {(change.route, change.figure): change.new for change in itself.changes}
    for count in result.counts or ():
        if count.status == "counted" and count.median is not None:
            values[(count.route, COUNTED)] = count.median
    return values


def figure_spreads(result: GradeResult) -> dict[tuple[str, str], tuple[float, float]]:
    """Per route and figure, the spread behind its value: for ms/step the lowest and
    highest of the completed repeats' medians (a repeat is the unit of evidence), or with
    one repeat its steps' quartiles; for memory the lowest and highest over repeats."""
    from topos_cli.judge.statistics import median, summarize

    warmup = 1 if result.verdict is None else result.verdict.settings.warmup_steps
    completed_by_route: dict[str, list[Repeat]] = {}
    for run in result.repeats:
        if run.status == "ok":
            completed_by_route.setdefault(run.route, []).append(run)
    spreads: dict[tuple[str, str], tuple[float, float]] = {}
    for route, completed in completed_by_route.items():
        steps = [run.measured_step_seconds(warmup) for run in completed if run.step_seconds]
        if len(steps) >= 2:
            medians = [median(seconds) * 1000.0 for seconds in steps]
            spreads[(route, "ms/step")] = (min(medians), max(medians))
        elif steps:
            summary = summarize([seconds * 1000.0 for seconds in steps[0]])
            spreads[(route, "ms/step")] = (summary.lower_quartile, summary.upper_quartile)
        for figure, values in (
            ("peak RSS", [run.peak_rss_bytes for run in completed]),
            ("training delta", [run.training_delta_bytes for run in completed]),
            (STEP_TENSORS, [run.step_tensor_bytes for run in completed]),
        ):
            known = [value for value in values if value is not None]
            if known:
                spreads[(route, figure)] = (float(min(known)), float(max(known)))
    for count in result.counts or ():
        if count.status == "counted" and count.judged_steps:
            judged = count.judged_steps
            spreads[(count.route, COUNTED)] = (float(min(judged)), float(max(judged)))
    return spreads


def counted_change(change: CountChange) -> FigureChange:
    """A route's counted work against the grade before, as a trend's change of a figure
    (`count_judgement` judged it: within its tolerance, `no change`)."""
    ratio = change.ratio
    return FigureChange(
        route=change.route,
        figure=COUNTED,
        unit="instructions",
        old=change.old,
        new=change.new,
        change=None if ratio is None else ratio - 1.0,
        tolerance=change.tolerance,
        p_value=None,
        significant=change.status in SIGNIFICANT if change.decided else None,
        status=change.status,
    )


def verdict_sentence(result: GradeResult) -> str | None:
    """The grade's verdict in one sentence: against `--against`'s checkout when it had
    one (the comparison a pull request is judged by), else the grade's own."""
    against = result.against.comparison if result.against is not None else None
    if against is not None and against.summary:
        return against.summary
    return None if result.verdict is None else result.verdict.summary


def _point(source: str, result: GradeResult) -> HistoryPoint:
    """A history point of a loaded result (its changes are filled in once ordered)."""
    return HistoryPoint(
        source=source,
        created=result.created or "",
        commit=describe_commit(result),
        status=result.status or "unknown",
        values=figure_values(result),
        spreads=figure_spreads(result),
        verdict=verdict_sentence(result),
        exit_status=result.exit_status,
        result=result,
    )


def read_history(
    paths: Sequence[str | os.PathLike[str]],
    *,
    workload: str | None = None,
    settings: CompareSettings | None = None,
) -> History:
    """Reads the results at `paths` (files or folders) into groups, oldest first.

    Files that are not topos results of this schema (or of another workload
    than `workload`, if given) are skipped, with the reason. Raises
    `ToposUsageError` when a path does not exist or no result is left.
    """
    settings = settings or CompareSettings()
    loaded: list[tuple[str, GradeResult]] = []
    skipped: list[str] = []
    for path, result in loaded_results(paths):
        if isinstance(result, ToposError):
            skipped.append(str(result))
            continue
        if workload is not None and result.workload.name != workload:
            skipped.append(f"{path} is a grade of {result.workload.name}, not {workload}")
            continue
        if not result.repeats:
            skipped.append(f"{path} holds no runs ({result.status})")
            continue
        loaded.append((path, result))
    if not loaded:
        where = ", ".join(str(path) for path in paths)
        raise ToposUsageError(f"no topos grade results to draw in {where}")
    loaded.sort(key=lambda item: (item[1].created or "", item[0]))
    keys = [grouping_key(result) for _, result in loaded]
    keys = [_known_key(key, keys) for key in keys]
    grouped: dict[tuple[tuple[str, str], ...], list[tuple[str, GradeResult]]] = {}
    for (source, result), key in zip(loaded, keys, strict=True):
        grouped.setdefault(key, []).append((source, result))
    groups = [_group(key, members, settings) for key, members in grouped.items()]
    return History(groups=tuple(groups), skipped=tuple(skipped))


def _is_unknown(value: str) -> bool:
    # "unknown", or "unknown (running ...)" for a BLAS whose build is not told.
    return value == "unknown" or value.startswith("unknown ")


def _agrees(name: str, value: str, other: str) -> bool:
    """Whether a fact a failed grade recorded, `value`, fits `other`'s: equal, unknown, or
    (data) the same source without the fingerprint only a loaded dataset gives."""
    if _is_unknown(value) or value == other:
        return True
    return name == "data" and other.startswith(f"{value} ")


def _known_key(
    key: tuple[tuple[str, str], ...], keys: Sequence[tuple[tuple[str, str], ...]]
) -> tuple[tuple[str, str], ...]:
    """`key`, or what a grade that failed before any worker was ready would have said.

    Such a grade knows its machine only from the parent (no BLAS, no NumPy) and its data
    only as asked (no fingerprint). It joins the one group whose every fact fits what it
    knows; failing that, it takes the machine facts of the one machine whose known facts
    fit (so it never invents a machine of its own) and stays in a group apart. With no
    fit, or several, it stays as it is: which machine it ran on cannot be told."""
    if not any(_is_unknown(value) for _, value in key):
        return key
    known = [other for other in keys if not any(_is_unknown(value) for _, value in other)]
    whole = {
        other
        for other in known
        if all(_agrees(name, value, dict(other).get(name, "")) for name, value in key)
    }
    if len(whole) == 1:
        return whole.pop()
    machines = {
        tuple((name, value) for name, value in other if name in MACHINE_FACTS)
        for other in known
        if all(
            _agrees(name, value, dict(other).get(name, ""))
            for name, value in key
            if name in MACHINE_FACTS
        )
    }
    if len(machines) != 1:
        return key
    machine = dict(machines.pop())
    return tuple((name, machine.get(name, value)) for name, value in key)


def _group(
    key: tuple[tuple[str, str], ...],
    members: Sequence[tuple[str, GradeResult]],
    settings: CompareSettings,
) -> HistoryGroup:
    """One group's points, each with its changes against the one before."""
    points = []
    for index, (source, result) in enumerate(members):
        point = _point(source, result)
        if index > 0:
            _, previous = members[index - 1]
            comparison = compare_results(
                previous,
                result,
                settings=settings,
                old_source=members[index - 1][0],
                new_source=source,
            )
            changes = {(change.route, change.figure): change for change in comparison.changes}
            changes.update(
                ((change.route, COUNTED), counted_change(change))
                for change in comparison.count_changes
            )
            point = HistoryPoint(**{**point.__dict__, "changes": changes})
        points.append(point)
    return HistoryGroup(
        workload=dict(key)["workload"],
        key=key,
        points=tuple(points),
    )


__all__ = [
    "COUNTED",
    "FIGURES",
    "STEP_TENSORS",
    "History",
    "HistoryGroup",
    "HistoryPoint",
    "figure_spreads",
    "figure_values",
    "grouping_key",
    "loaded_results",
    "read_history",
    "result_files",
]

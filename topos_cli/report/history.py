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
from pathlib import Path

from topos_cli.report.compare import (
    FIGURES,
    SIGNIFICANT,
    FigureChange,
    compare_results,
)
from topos_cli.report.display.result_description import describe_commit
from topos_cli.result.grade_result import DataFacts, GradeResult
from topos_cli.result.repeat import Repeat
from topos_cli.result.result_file import load_result
from topos_cli.result.tolerance import CompareSettings
from topos_cli.result.worker_facts import Numerics
from topos_cli.shared.errors import ToposError, ToposUsageError


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
    def host(self) -> str:
        """E.g. `host: Intel Xeon, 2 (2 available) cores, NumPy 2.4.6, scipy-openblas 0.3.31`."""
        facts = dict(self.key)
        return (
            f"host: {facts['CPU']}, {facts['cores']} cores, NumPy {facts['NumPy']}, "
            f"{facts['BLAS']}; environment {facts['environment']}; shards {facts['shards']}"
        )

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
    """What must be equal for two grades' figures to be compared: workload, host, settings."""
    host, settings = result.host, result.settings
    numerics = host.numerics or Numerics()
    blas = numerics.blas or {}
    data = result.workload.data or DataFacts()
    shards = sorted(f"{route} {facts.shards}" for route, facts in result.routes.items())
    threads = settings.threads
    fingerprint = str(data.fingerprint or "")[:12]
    source = data.source if data.source is not None else settings.data
    return (
        ("workload", result.workload.name),
        ("CPU", str(host.cpu_model)),
        ("cores", f"{host.logical_cores} ({host.available_cores} available)"),
        ("NumPy", str(numerics.numpy)),
        ("BLAS", f"{blas.get('name')} {blas.get('version')}"),
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
    ms/step over measured steps, median peak RSS and training delta over completed runs)."""
    itself = compare_results(result, result)
    return {(change.route, change.figure): change.new for change in itself.changes}


def figure_spreads(result: GradeResult) -> dict[tuple[str, str], tuple[float, float]]:
    """Per route and figure, the spread behind its value: for ms/step the lowest and
    highest of the completed repeats' medians (a repeat is the unit of evidence), or with
    one repeat its steps' quartiles; for memory the lowest and highest over repeats."""
    from topos_cli.report.statistics import median, summarize

    warmup = 1 if result.verdict is None else result.verdict.settings.warmup_steps
    runs: dict[str, list[Repeat]] = {}
    for run in result.repeats:
        if run.status == "ok":
            runs.setdefault(run.route, []).append(run)
    spreads: dict[tuple[str, str], tuple[float, float]] = {}
    for route, completed in runs.items():
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
        ):
            known = [value for value in values if value is not None]
            if known:
                spreads[(route, figure)] = (float(min(known)), float(max(known)))
    return spreads


def result_files(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The files named, and the `*.json` files directly inside each folder named."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files.extend(sorted(path.glob("*.json")))
        elif path.exists():
            files.append(path)
        else:
            raise ToposUsageError(f"{path}: no such file or directory")
    return files


def _point(source: str, result: GradeResult) -> HistoryPoint:
    """A history point of a loaded result (its changes are filled in once ordered)."""
    return HistoryPoint(
        source=source,
        created=result.created or "",
        commit=describe_commit(result),
        status=result.status or "unknown",
        values=figure_values(result),
        spreads=figure_spreads(result),
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
    for path in result_files(paths):
        try:
            result = load_result(path)
        except ToposError as error:
            skipped.append(str(error))
            continue
        if workload is not None and result.workload.name != workload:
            skipped.append(f"{path} is a grade of {result.workload.name}, not {workload}")
            continue
        if not result.repeats:
            skipped.append(f"{path} holds no runs ({result.status})")
            continue
        loaded.append((str(path), result))
    if not loaded:
        where = ", ".join(str(path) for path in paths)
        raise ToposUsageError(f"no topos grade results to draw in {where}")
    loaded.sort(key=lambda item: (item[1].created or "", item[0]))
    grouped: dict[tuple[tuple[str, str], ...], list[tuple[str, GradeResult]]] = {}
    for source, result in loaded:
        grouped.setdefault(grouping_key(result), []).append((source, result))
    groups = [_group(key, members, settings) for key, members in grouped.items()]
    return History(groups=tuple(groups), skipped=tuple(skipped))


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
            point = HistoryPoint(**{**point.__dict__, "changes": changes})
        points.append(point)
    return HistoryGroup(
        workload=dict(key)["workload"],
        key=key,
        points=tuple(points),
    )


__all__ = [
    "FIGURES",
    "History",
    "HistoryGroup",
    "HistoryPoint",
    "figure_spreads",
    "figure_values",
    "grouping_key",
    "read_history",
    "result_files",
]

"""`topos frontier`: a grade whose options name remat budgets (`GradeOptions.budgets`) runs
engine, recorded, and remat at each budget, each in a worker of its own as `run_grade`
runs every grade; what this module adds is a table of ms/step against training Δ and peak
RSS, a picture of it beside the result JSON, parity checked across every point.

A point is named by its route, and remat's by its budget too (`remat@50%`). A budget
below the floor of the workload's remat plan is not graded: the table says so, with the
floor, and it does not fail the frontier (the sweep asked for it). Otherwise the exit
statuses are those of `topos grade`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from topos_cli.commands.grade import end_grade, grade_exit_status, grade_with, judge_record
from topos_cli.commands.grade_result import (
    GradeRecord,
    compose_grade_result,
    memory_predictions,
    route_facts,
)
from topos_cli.harness.grade_plan import GradeOptions, GradePlan
from topos_cli.harness.monitor import WorkerObserver
from topos_cli.harness.report_child import ReportChild
from topos_cli.harness.result_destination import save_result
from topos_cli.harness.route_runner import run_routes
from topos_cli.report.display.frontier_picture import (
    FrontierPoint,
    frontier_points_of,
    frontier_svg,
)
from topos_cli.report.display.result_description import describe_data, describe_predictions
from topos_cli.report.display.tables import markdown_table, plain_table
from topos_cli.report.verdict import Verdict
from topos_cli.result.result_file import default_result_path
from topos_cli.shared.units import MEBIBYTE, format_bytes, format_milliseconds

HEADERS = (
    "point",
    "budget",
    "planned MiB",
    "recomputed",
    "ms/step",
    "training Δ MiB",
    "peak RSS MiB",
    "against recorded",
)


def point_label(route: str, budget: str | None) -> str:
    """`engine`, `recorded`, or `remat@50%`."""
    return route if budget is None else f"{route}@{budget}"


def picture_path(result_path: str, workload: str) -> Path:
    """Where the picture goes: beside the result JSON, or in results/ when the JSON goes
    to standard output."""
    if result_path == "-":
        return default_result_path(workload, command="frontier").with_suffix(".svg")
    return Path(result_path).with_suffix(".svg")


def _is_refused_budget(result, request) -> bool:
    error = result.facts.get("error") or {}
    return request.route == "remat" and error.get("type") == "BudgetError"


def run_points(
    plan: GradePlan, display: WorkerObserver | None = None
) -> tuple[GradeRecord, list[dict[str, Any]]]:
    """Runs every point, one at a time, as a grade runs its routes; a budget below the floor
    is set aside, not graded, and each remat point is labelled with its budget."""
    refused: list[dict[str, Any]] = []

    def admit(result, request):
        label = point_label(request.route, request.budget)
        if _is_refused_budget(result, request):
            message = (result.facts.get("error") or {}).get("message")
            refused.append({"point": label, "budget": request.budget, "why": message})
            return None
        return replace(result, route=label, repeat=0) if request.route == "remat" else result

    return run_routes(plan, display, admit), refused


def frontier_rows(result: dict[str, Any], verdict: Verdict | None) -> list[list[str]]:
    """The table's rows: one per graded point, in the order they ran."""
    rows = []
    if verdict is None:
        return rows
    pairings = {pairing.route: pairing for pairing in verdict.pairings}
    for route in verdict.routes:
        facts = (result["routes"].get(route.route) or {}).get("remat") or {}
        volume = (result["routes"].get(route.route) or {}).get("live_volume") or {}
        speed, memory = route.speed, route.memory
        planned = facts.get("planned_bytes", volume.get("plan_training_bytes"))
        budget = "—"
        if facts:
            budget = (
                f"{format_bytes(facts['budget_bytes'])} ({100 * facts['budget_fraction']:.0f}%)"
            )
        recomputed = "—"
        if facts:
            recomputed = f"{facts['recomputations']} (+{100 * facts['extra_flops_fraction']:.1f}%)"
        pairing = pairings.get(route.route)
        rows.append(
            [
                route.route if route.completed else f"{route.route} ({route.status})",
                budget,
                "?" if planned is None else f"{planned / MEBIBYTE:.1f}",
                recomputed,
                "?" if speed is None else format_milliseconds(speed.milliseconds_per_step.median),
                "?"
                if memory is None or memory.training_delta_bytes is None
                else f"{memory.training_delta_bytes / MEBIBYTE:.1f}",
                "?"
                if memory is None or memory.peak_rss_bytes is None
                else f"{memory.peak_rss_bytes / MEBIBYTE:.1f}",
                "—" if pairing is None else pairing.phrase.removeprefix("against recorded: "),
            ]
        )
    return rows


def frontier_points(verdict: Verdict | None) -> list[FrontierPoint]:
    """The picture's points: every graded point with both figures and its interval."""
    return frontier_points_of(verdict)


def grade_points(
    plan: GradePlan,
    host: Mapping[str, Any],
    display: WorkerObserver | None,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """A frontier's part of `run_grade`: runs every point (`run_points`), then judges,
    writes, draws and prints them; returns the exit status."""
    ReportChild.end_early()
    record, refused = run_points(plan, display)
    return _finish(plan, record, refused, host, stdout=stdout, stderr=stderr)


def _finish(plan, record, refused, host, *, stdout: TextIO, stderr: TextIO) -> int:
    options = plan.options
    verdict = judge_record(record, host)
    exit_status = grade_exit_status(record, verdict, None)
    result = compose_grade_result(plan, record, host, verdict, None, exit_status)
    labels = list(dict.fromkeys(run.route for run in record.results))
    result["routes"] = route_facts(record.results, labels)
    result["memory_prediction"] = memory_predictions(result["routes"], verdict)
    picture = picture_path(plan.result_path, options.workload)
    result["frontier"] = {
        "budgets": list(options.budgets),
        "points": labels,
        "refused": refused,
        "picture": str(picture),
    }
    saved = save_result(plan.result_path, result, default=plan.default_path)
    if saved.path not in (None, "-"):
        picture = Path(saved.path).with_suffix(".svg")
    table_stream = stderr if plan.result_path == "-" else stdout
    drawn = None
    try:
        picture.parent.mkdir(parents=True, exist_ok=True)
        title = f"{options.workload}: ms/step against training Δ ({options.steps} steps)"
        picture.write_text(frontier_svg(frontier_points(verdict), title), encoding="utf-8")
        drawn = picture
    except OSError as error:
        stderr.write(f"topos: error: cannot write the picture {picture}: {error}\n")
    rows = frontier_rows(result, verdict)
    rows += [[entry["point"], "below the floor", "", "", "", "", "", ""] for entry in refused]
    table = markdown_table(HEADERS, rows) if options.markdown else plain_table(HEADERS, rows)
    lines = [table, ""]
    if verdict is not None:
        lines.append(verdict.summary)
    for entry in refused:
        lines.append(f"{entry['point']}: not graded: {entry['why']}")
    lines.append("")
    lines.append(describe_data(result["workload"]["data"]))
    lines += describe_predictions(result["memory_prediction"])
    table_stream.write("\n".join(lines) + "\n")
    table_stream.flush()
    if saved.path not in (None, "-"):
        stderr.write(f"results: {saved.path}\n")
    if drawn is not None:
        stderr.write(f"picture: {drawn}\n")
    if saved.error is not None:
        stderr.write(f"topos: error: {saved.error}\n")
    end_grade(record, stderr)
    return exit_status


def run_frontier(
    options: GradeOptions,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    display: WorkerObserver | None = None,
) -> int:
    """Validates, runs, judges, records, draws and prints a frontier (`options.budgets`
    names the remat budgets); returns its exit status."""
    return grade_with(options, grade_points, stdout=stdout, stderr=stderr, display=display)

"""`topos frontier`: a grade whose options name remat budgets (`GradeOptions.budgets`) runs
engine, recorded, and remat at each budget, each in a worker of its own as `run_grade`
runs every grade; what this module adds is a table of ms/step against training Δ and peak
RSS, a picture of it beside the result JSON, parity checked across every point.

A point is named by its route, and remat's by its budget too (`remat@50%`). Budgets
whose lowered plans are the same (`identical_plans`: the same schedule into as many
bytes) are one point, graded once and named by them all (`remat@floor+25%=floor`). A budget
below the floor of the workload's remat plan is not graded: the table says so, with the
floor, and it does not fail the frontier (the sweep asked for it). Otherwise the exit
statuses are those of `topos grade`. A native workload's frontier (a PyTorch step's
activation memory budgets, a JAX step's checkpoint policies) is
`commands.native_frontier`'s.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

import msgspec

from topos.system.atomic_file import write_bytes_atomically
from topos_cli.commands.grade import end_grade, grade_exit_status, grade_with, judge_gathered
from topos_cli.commands.result_composition import (
    GatheredRepeats,
    compose_grade_result,
    memory_predictions,
    route_facts,
)
from topos_cli.harness.grade_preparation import (
    GradeOptions,
    PreparedGrade,
    picture_path,
    prepare,
)
from topos_cli.harness.identical_plans import group_label, groups_of
from topos_cli.harness.lowered_schedules import attach_schedules, plan_remat
from topos_cli.harness.report_child import ReportChild
from topos_cli.harness.result_destination import incomplete_kind, save_result
from topos_cli.harness.route_runner import run_routes
from topos_cli.harness.worker_observer import WorkerObserver
from topos_cli.harness.workload_preflight_run import preflight_workload
from topos_cli.render.exporters.markdown_table import markdown_table
from topos_cli.render.frontier_picture import (
    FrontierPoint,
    frontier_points_of,
    frontier_svg,
)
from topos_cli.render.frontier_table import HEADERS, frontier_rows, unbounded_line
from topos_cli.render.result_description import describe_data, describe_predictions
from topos_cli.render.tables import plain_table
from topos_cli.render.verdict_table import verdict_notes
from topos_cli.result.grade_result import (
    FrontierFacts,
    GradeResult,
    HostFacts,
    RefusedPoint,
)
from topos_cli.shared.errors import ToposError
from topos_cli.shared.output_path import check_output


def point_label(route: str, budget: str | None) -> str:
    """`engine`, `recorded`, or `remat@50%`."""
    return route if budget is None else f"{route}@{budget}"


def _is_refused_budget(result, request) -> bool:
    error = result.facts.error
    return request.route == "remat" and error is not None and error.type == "BudgetError"


def one_request_per_plan(preparation: PreparedGrade, groups: list[tuple[str, ...]]) -> None:
    """Leaves in `preparation.requests` one remat run per group of budgets whose plans are the
    same (the first budget's), named by every budget of the group."""
    kept = {group[0]: group for group in groups}
    requests = []
    for request in preparation.requests:
        if request.route != "remat" or request.budget is None:
            requests.append(request)
        elif request.budget in kept:
            label = point_label("remat", group_label(kept[request.budget]))
            requests.append(replace(request, point=label))
    preparation.requests = requests


def run_points(
    preparation: PreparedGrade, display: WorkerObserver | None = None
) -> tuple[GatheredRepeats, list[RefusedPoint]]:
    """Runs every point, one at a time, as a grade runs its routes; a budget below the floor
    is set aside, not graded, and each remat point is labelled with its budget (with every
    budget of its plan, `one_request_per_plan`)."""
    refused: list[RefusedPoint] = []

    def admit(result, request):
        label = request.point or point_label(request.route, request.budget)
        if _is_refused_budget(result, request):
            refused.append(
                RefusedPoint(point=label, budget=request.budget, why=result.facts.error.message)
            )
            return None
        if request.route != "remat":
            return result
        return msgspec.structs.replace(result, route=label, repeat=0)

    return run_routes(preparation, display, admit), refused


def frontier_points(result: GradeResult) -> list[FrontierPoint]:
    """The picture's points: every graded point with both figures and its interval, its
    predicted Δ and its budget, planned bytes and recomputations, read from the result's
    verdict record."""
    return frontier_points_of(result.verdict, result)


def grade_points(
    preparation: PreparedGrade,
    host: HostFacts,
    display: WorkerObserver | None,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """A frontier's part of `run_grade`: runs every point (`run_points`), then judges,
    writes, draws and prints them; returns the exit status."""
    ReportChild.end_early()
    # One planning child, before any worker, tells which budgets are one plan and writes
    # each plan's schedule, from which its worker rebuilds it (`lowered_schedules`).
    with tempfile.TemporaryDirectory(prefix="topos-remat-schedules-") as directory:
        planned = plan_remat(
            preparation.options.workload,
            preparation.data,
            preparation.options.budgets,
            directory,
            preparation.environment,
            timeout=preparation.options.timeout,
        )
        groups = groups_of(preparation.options.budgets, planned.plans)
        one_request_per_plan(preparation, groups)
        preparation = attach_schedules(preparation, planned)
        gathered, refused = run_points(preparation, display)
    return _finish(preparation, gathered, refused, host, groups, stdout=stdout, stderr=stderr)


def _finish(preparation, gathered, refused, host, groups, *, stdout: TextIO, stderr: TextIO) -> int:
    options = preparation.options
    verdict = judge_gathered(gathered, host)
    exit_status = grade_exit_status(gathered, verdict, None)
    result = compose_grade_result(preparation, gathered, host, verdict, None, exit_status)
    labels = list(dict.fromkeys(run.route for run in gathered.results))
    facts_by_point = route_facts(gathered.results, labels)
    picture = picture_path(preparation.result_path, preparation.workload_name or options.workload)
    result = msgspec.structs.replace(
        result,
        routes=facts_by_point,
        memory_prediction=memory_predictions(facts_by_point, verdict),
        frontier=FrontierFacts(
            budgets=list(options.budgets),
            points=labels,
            refused=refused,
            picture=str(picture),
            same_plans=[list(group) for group in groups if len(group) > 1],
        ),
    )
    saved = save_result(preparation.result_path, result, default=preparation.default_path)
    if saved.path not in (None, "-"):
        picture = Path(saved.path).with_suffix(".svg")
    table_stream = stderr if preparation.result_path == "-" else stdout
    title = (
        f"topos frontier: {options.workload}, ms/step against training Δ ({options.steps} steps)"
    )
    drawn = write_picture(picture, lambda: frontier_svg(frontier_points(result), title), stderr)
    rows = frontier_rows(result, result.verdict)
    rows += [[entry.point, "below the floor", *[""] * (len(HEADERS) - 2)] for entry in refused]
    table = markdown_table(HEADERS, rows) if options.markdown else plain_table(HEADERS, rows)
    lines = [table, ""]
    unbounded = unbounded_line(result)
    if unbounded:
        lines.append(unbounded)
    if verdict is not None:
        lines.append(verdict.summary)
    for entry in refused:
        lines.append(f"{entry.point}: not graded: {entry.why}")
    for group in groups:
        if len(group) > 1:
            lines.append(
                f"remat@{group_label(group)}: one plan (the same schedule into as many "
                f"bytes), graded once"
            )
    if result.verdict is not None:
        # Failures and warnings, as grade prints them (the JSON has them too).
        lines += verdict_notes(result.verdict)
    lines.append("")
    lines.append(describe_data(result.workload.data))
    lines += describe_predictions(result.memory_prediction)
    table_stream.write("\n".join(lines) + "\n")
    table_stream.flush()
    say_where_it_went(saved, result, drawn, stderr)
    end_grade(gathered, stderr)
    return exit_status


def run_frontier(
    options: GradeOptions,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    display: WorkerObserver | None = None,
    budget_texts: Sequence[str] | None = None,
) -> int:
    """Validates, runs, judges, records, draws and prints a frontier (`options.budgets`
    names the remat budgets); returns its exit status.

    Without `options.budgets`, the workload is asked first what it is (its preflight):
    `budget_texts` (`--budgets` as typed; None: not given) are then a native workload's
    points (`commands.native_frontier`), or a topos workload's remat budgets (by
    default `DEFAULT_FRONTIER_BUDGETS`)."""
    streams = {"stdout": stdout, "stderr": stderr, "display": display}
    if options.budgets:
        return grade_with(options, grade_points, **streams)
    from topos_cli.commands.grade_commands import DEFAULT_FRONTIER_BUDGETS
    from topos_cli.commands.native_frontier import grade_native_points, native_frontier_options
    from topos_cli.commands.options import distinct_budgets
    from topos_cli.harness.data_option import data_directory

    prepare(options)  # the options' mistakes said before the workload is looked at
    preflight = preflight_workload(options.workload, data_directory(options.data))
    if preflight.framework is None:
        texts = budget_texts or DEFAULT_FRONTIER_BUDGETS.split(",")
        chosen = replace(options, budgets=distinct_budgets(list(texts)))
        return grade_with(chosen, grade_points, preflight=preflight, **streams)
    native = native_frontier_options(options, preflight, budget_texts)
    return grade_with(native, grade_native_points, preflight=preflight, **streams)


def write_picture(picture: Path, draw: Callable[[], str], stderr: TextIO) -> Path | None:
    """Writes the frontier's picture (the SVG `draw` gives) to `picture`; its path, or
    None after one error line on `stderr` when it cannot be written (the result is kept
    all the same)."""
    try:
        # Checked again: the result may have gone elsewhere (kept beside a complete one),
        # and a device or FIFO put there meanwhile must not be written into.
        check_output(picture, "the picture beside the result")
        write_bytes_atomically(picture, draw().encode("utf-8"))
    except ToposError as error:
        stderr.write(f"topos: error: {error}\n")
    except OSError as error:
        stderr.write(
            f"topos: error: cannot write the picture {picture}: {error.strerror or error}\n"
        )
    else:
        return picture
    return None


def say_where_it_went(saved: Any, result: GradeResult, drawn: Any, stderr: TextIO) -> None:
    """Where a frontier's result and picture went, on stderr: the result's path, a complete
    result kept beside it, the picture, or why the result could not be written."""
    if saved.path not in (None, "-"):
        stderr.write(f"results: {saved.path}\n")
    if saved.kept is not None:
        stderr.write(
            f"topos: {saved.kept} holds a complete result, kept; this "
            f"{incomplete_kind(result)} frontier's result is beside it, {saved.path}\n"
        )
    if drawn is not None:
        stderr.write(f"picture: {drawn}\n")
    if saved.error is not None:
        stderr.write(f"topos: error: {saved.error}\n")

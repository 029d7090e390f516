"""`topos frontier` on a native workload: a PyTorch step's activation memory budgets, or
a JAX step's checkpoint policies, each a route graded in a worker of its own as
`topos grade` grades it; what this module adds is the choice of points from `--budgets`,
and a table and picture of ms/step against training Δ and peak RSS with PyTorch's
partitioner's estimate beside each compiled point and the memory flags
(`render.native_frontier_point`).

A PyTorch step's `--budgets` are fractions (`0.2`, or `20%`) of
`torch._functorch.config.activation_memory_budget`, each the route
`compile-budget-<fraction>`; beside them, as references, `eager`, `checkpoint` and
`selective` (`eager` alone for a step without blocks to checkpoint), or the routes
`--budgets` names among its budgets (`eager,0.5`). A JAX
step's points are its checkpoint policies, its routes: every one it offers unless
`--budgets` names them. The exit statuses are those of `topos grade`; a flag is not a
failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TextIO

import msgspec

from topos.names import compile_budget_of, unknown_native_route
from topos_cli.commands.frontier import say_where_it_went, write_picture
from topos_cli.commands.grade import end_grade, grade_exit_status, judge_gathered
from topos_cli.commands.options import MOST_BUDGETS
from topos_cli.commands.result_composition import compose_grade_result
from topos_cli.harness.grade_preparation import GradeOptions, PreparedGrade, picture_path
from topos_cli.harness.report_child import ReportChild
from topos_cli.harness.result_destination import save_result
from topos_cli.harness.route_runner import run_routes
from topos_cli.harness.worker_observer import WorkerObserver
from topos_cli.harness.workload_preflight_run import PreflightOutcome
from topos_cli.render.exporters.markdown_table import markdown_table
from topos_cli.render.frontier_picture import frontier_svg
from topos_cli.render.native_frontier_point import (
    native_frontier_points,
    picture_axis,
    picture_points,
)
from topos_cli.render.native_frontier_table import (
    native_frontier_headers,
    native_frontier_notes,
    native_frontier_rows,
)
from topos_cli.render.result_description import describe_data
from topos_cli.render.tables import plain_table
from topos_cli.render.verdict_table import verdict_notes
from topos_cli.result.grade_result import FlaggedPoint, FrontierFacts, HostFacts
from topos_cli.shared.errors import ToposUsageError

#: A PyTorch step's budgets unless `--budgets` names others.
DEFAULT_TORCH_BUDGETS = ("0.2", "0.5", "0.8")
#: The points beside a PyTorch step's budgets, unless `--budgets` names routes of its own.
TORCH_REFERENCES = ("eager", "checkpoint", "selective")


def activation_budget_of(text: str) -> float | None:
    """The activation memory budget `text` names: a fraction from 0 to 1 (`0.5`), a
    percentage up to 100% (`50%`), or a `compile-budget-<fraction>` route; else None."""
    cleaned = text.strip()
    named = compile_budget_of(cleaned)
    if named is not None:
        return named
    share = cleaned.endswith("%")
    try:
        value = float(cleaned.removesuffix("%"))
    except ValueError:
        return None
    fraction = value / 100 if share else value
    return fraction if 0.0 <= fraction <= 1.0 else None


def native_points(
    framework: str,
    offered: Sequence[str],
    texts: Sequence[str] | None,
    references: Sequence[str] = TORCH_REFERENCES,
) -> tuple[str, ...]:
    """The routes a native frontier grades, in order, from `--budgets` as typed (`texts`;
    None: not given): a PyTorch step's references (the routes `texts` names, else
    `references`) then its budgets' routes; a JAX step's policies. A usage error (one
    line) for a text naming neither, or for more than `MOST_BUDGETS` of them."""
    if texts is not None and len(texts) > MOST_BUDGETS:
        raise ToposUsageError(
            f"--budgets names {len(texts)} points; a frontier grades at most {MOST_BUDGETS}"
        )
    if framework != "torch":
        if texts is None:
            return tuple(offered)
        for text in texts:
            if unknown_native_route(text, framework, list(offered)) is not None:
                raise ToposUsageError(
                    f"--budgets {text!r}: a {framework} step's points are its checkpoint "
                    f"policies, its routes: {', '.join(offered)} or checkpoint-names:<a+b>"
                )
        return tuple(dict.fromkeys(texts))
    named, budgets = [], []
    for text in texts or DEFAULT_TORCH_BUDGETS:
        fraction = activation_budget_of(text)
        if fraction is not None:
            budgets.append(f"compile-budget-{fraction:g}")
        elif unknown_native_route(text, framework, list(offered)) is None:
            named.append(text)
        else:
            raise ToposUsageError(
                f"--budgets {text!r}: a PyTorch step's budgets are activation memory "
                f"budgets from 0 to 1 (0.5, or 50%), beside any of its routes "
                f"({', '.join(offered)})"
            )
    return tuple(dict.fromkeys([*(named or references), *budgets]))


def native_frontier_options(
    options: GradeOptions, preflight: PreflightOutcome, texts: Sequence[str] | None
) -> GradeOptions:
    """`options` as a grade of the native frontier's points (`native_points`), from what
    the workload's preflight told of it."""
    references = preflight.frontier_references or TORCH_REFERENCES
    return replace(
        options,
        routes=native_points(preflight.framework, preflight.routes, texts, references),
        budgets=(),
        native_frontier=True,
    )


def grade_native_points(
    preparation: PreparedGrade,
    host: HostFacts,
    display: WorkerObserver | None,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """A native frontier's part of `grade_with`: runs every point (a route, in a worker of
    its own), then judges, writes, draws and prints them; returns the exit status."""
    ReportChild.end_early()
    gathered = run_routes(preparation, display)
    options = preparation.options
    verdict = judge_gathered(gathered, host)
    exit_status = grade_exit_status(gathered, verdict, None)
    result = compose_grade_result(preparation, gathered, host, verdict, None, exit_status)
    points = native_frontier_points(
        gathered.results, result.verdict, preparation.compare_settings.memory_tolerance
    )
    picture = picture_path(preparation.result_path, preparation.workload_name or options.workload)
    result = msgspec.structs.replace(
        result,
        frontier=FrontierFacts(
            budgets=[f"{point.budget:g}" for point in points if point.budget is not None],
            points=[point.label for point in points],
            picture=str(picture),
            flagged=[
                FlaggedPoint(point=point.label, why=flag)
                for point in points
                for flag in point.flags
            ],
        ),
    )
    saved = save_result(preparation.result_path, result, default=preparation.default_path)
    if saved.path not in (None, "-"):
        picture = Path(saved.path).with_suffix(".svg")
    axis = picture_axis(points)
    title = (
        f"topos frontier: {preparation.workload_name or options.workload}, ms/step against "
        f"{'step tensors' if axis else 'training Δ'} ({options.steps} steps)"
    )
    drawn = write_picture(
        picture, lambda: frontier_svg(picture_points(points, result.verdict), title, axis), stderr
    )
    rows, headers = native_frontier_rows(points), native_frontier_headers(points)
    table = markdown_table(headers, rows) if options.markdown else plain_table(headers, rows)
    lines = [table, "", *native_frontier_notes(points)]
    if verdict is not None:
        lines.append(verdict.summary)
        lines += verdict_notes(result.verdict)
    lines += ["", describe_data(result.workload.data)]
    table_stream = stderr if preparation.result_path == "-" else stdout
    table_stream.write("\n".join(lines) + "\n")
    table_stream.flush()
    say_where_it_went(saved, result, drawn, stderr)
    end_grade(gathered, stderr)
    return exit_status

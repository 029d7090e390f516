"""The plan of a grade: its options, validated up front, and the runs in a balanced order.

Everything is checked before the first worker starts (routes, counts, the data
directory, where the result goes, the baseline), so a usage error costs
nothing and leaves no folder behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from topos.budget_text import BudgetTextError, parse_budget
from topos.names import (
    DEFAULT_ROUTES,
    ROUTES,
    UnknownNameError,
    check_route,
    check_workload_name,
)
from topos_cli.harness.data_option import data_directory
from topos_cli.harness.monitor import WorkerRequest, worker_environment
from topos_cli.harness.report_child import reports_wanted
from topos_cli.result.grade_result import GradeResult
from topos_cli.result.result_file import default_report_path, default_result_path, load_result
from topos_cli.result.tolerance import CompareSettings, parse_tolerance
from topos_cli.shared.bounds import (
    MOST_REPEATS,
    MOST_STEPS,
    MOST_THREADS,
    check_count,
    check_seconds,
)
from topos_cli.shared.errors import IncomparableResultsError, ToposUsageError
from topos_cli.shared.output_path import check_not_input, check_outputs

#: How long one run of one route may take before it is killed: generous, an hour.
DEFAULT_TIMEOUT_SECONDS = 3600.0


@dataclass(frozen=True)
class GradeOptions:
    """What `topos grade` was asked to do; `run_grade` validates it."""

    workload: str = "cifar10"
    steps: int = 300
    routes: tuple[str, ...] = DEFAULT_ROUTES
    repeat: int = 1
    #: A directory of real data files, or `None` (or `"synthetic"`) for the stand-in.
    data: str | None = None
    threads: int | None = None
    #: Where the result goes: a path, `-` for standard output, `None` for the default.
    json_path: str | None = None
    baseline: str | None = None
    #: `--tolerance` as typed (see `topos_cli.result.tolerance`), `None` for the defaults.
    tolerance: str | None = None
    timeout: float | None = DEFAULT_TIMEOUT_SECONDS
    markdown: bool = False
    github_benchmark: str | None = None
    #: Check the gradients against finite differences first (`topos check`, in a child).
    check: bool = False
    #: The remat route's budget as typed (`50%`, `64MiB`, `floor`); `None` for the
    #: default (half of recorded's planned bytes, or the floor where that is more).
    budget: str | None = None
    #: Each remat run's budget, when a grade runs remat at several (`topos frontier`):
    #: one run of remat per budget, in order, after the other routes.
    budgets: tuple[str, ...] = ()


@dataclass
class GradePlan:
    """Validated options, and everything decided before the first worker starts."""

    options: GradeOptions
    data: str | None
    result_path: str
    #: Whether `result_path` is the default name (claimed exclusively, never replacing a file).
    default_path: bool
    baseline: GradeResult | None
    compare_settings: CompareSettings
    requests: list[WorkerRequest]
    environment: dict[str, str]
    started: datetime = field(default_factory=lambda: datetime.now(timezone.utc))


def interleaved_order(routes: Sequence[str], repeats: int) -> list[tuple[str, int]]:
    """The runs in a balanced order: the routes forward, then backward, and so on.

    `engine, recorded` over three repeats gives engine, recorded, recorded,
    engine, engine, recorded: each route runs early and late alike.
    """
    order = []
    for repeat in range(repeats):
        sequence = routes if repeat % 2 == 0 else tuple(reversed(routes))
        order += [(route, repeat) for route in sequence]
    return order


def picture_path(result_path: str, workload: str) -> Path:
    """Where a frontier's picture goes: beside the result JSON, or in results/ when the
    JSON goes to standard output."""
    if result_path == "-":
        return default_result_path(workload, command="frontier").with_suffix(".svg")
    return Path(result_path).with_suffix(".svg")


def side_outputs(result_path: str, options: GradeOptions) -> dict[str, str]:
    """The files a grade writes beside its result, by what names them in a message: the
    report drawn beside it (`default_report_path`), or a frontier's picture."""
    if options.budgets:
        return {"the picture beside the result": str(picture_path(result_path, options.workload))}
    if result_path == "-" or not reports_wanted():
        return {}
    return {"the report beside the result": str(default_report_path(result_path))}


def prepare(options: GradeOptions, moment: datetime | None = None) -> GradePlan:
    """Validates `options` and plans the runs; raises `ToposUsageError` (exit 2) on any problem."""
    started = moment or datetime.now(timezone.utc)
    try:
        check_workload_name(options.workload)
        if not options.routes:
            raise UnknownNameError(f"--routes names no route; routes are {', '.join(ROUTES)}")
        for route in options.routes:
            check_route(route)
    except UnknownNameError as error:
        raise ToposUsageError(str(error)) from None
    for budget in (options.budget, *options.budgets):
        if budget is not None:
            try:
                parse_budget(budget)
            except BudgetTextError as error:
                raise ToposUsageError(str(error)) from None
    # Every number bounded before anything is planned: the runs are planned from them.
    check_count("--steps", options.steps, most=MOST_STEPS)
    check_count("--repeat", options.repeat, most=MOST_REPEATS)
    if options.threads is not None:
        check_count("--threads", options.threads, most=MOST_THREADS)
    if options.timeout is not None:
        check_seconds("--timeout", options.timeout)
    compare_settings = parse_tolerance(options.tolerance)
    data = data_directory(options.data)
    # A grade of remat at several budgets is a frontier, and its result is named so.
    command = "frontier" if options.budgets else "grade"
    default_path = default_result_path(options.workload, started, command=command)
    result_path = options.json_path or str(default_path)
    # Nothing is created yet: a usage error must leave no folder behind. Every file the
    # grade will write is checked by the one guard: the result, the benchmark list, and
    # the report (a frontier: the picture) drawn beside the result. Two of them on one
    # path would clobber each other, and only the result may replace the baseline it is
    # compared with (that is a rolling baseline); the others must not destroy it.
    outputs = {"--json": result_path, "--github-benchmark": options.github_benchmark}
    beside = side_outputs(result_path, options)
    check_outputs({**outputs, **beside}, standard_output=tuple(outputs))
    check_not_input(
        {"--github-benchmark": options.github_benchmark, **beside}, {"--baseline": options.baseline}
    )
    baseline = None
    if options.baseline is not None:
        baseline = load_result(options.baseline)
        if baseline.workload.name != options.workload:
            raise IncomparableResultsError(
                f"--baseline {options.baseline} is a result of workload "
                f"{baseline.workload.name}, not {options.workload}"
            )
    requests = [
        WorkerRequest(
            workload=options.workload,
            route=route,
            steps=options.steps,
            data=data,
            repeat=repeat,
            timeout=options.timeout,
            budget=options.budget if route == "remat" else None,
        )
        for route, repeat in interleaved_order(options.routes, options.repeat)
    ]
    requests += [
        WorkerRequest(
            workload=options.workload,
            route="remat",
            steps=options.steps,
            data=data,
            repeat=position,
            timeout=options.timeout,
            budget=budget,
        )
        for position, budget in enumerate(options.budgets)
    ]
    return GradePlan(
        options=options,
        data=data,
        result_path=result_path,
        default_path=options.json_path is None,
        baseline=baseline,
        compare_settings=compare_settings,
        requests=requests,
        environment=worker_environment(options.threads),
        started=started,
    )

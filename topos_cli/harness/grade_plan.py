"""The plan of a grade: its options, validated up front, and the runs in a balanced order.

Everything is checked before the first worker starts (routes, counts, the data
directory, where the result goes, the baseline), so a usage error costs
nothing and leaves no folder behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

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
from topos_cli.harness.other_checkout import OtherCheckout, check_against
from topos_cli.harness.result_destination import check_destination, check_distinct
from topos_cli.result.result_file import default_result_path, load_result
from topos_cli.result.tolerance import CompareSettings, parse_tolerance
from topos_cli.shared.errors import IncomparableResultsError, ToposUsageError
from topos_cli.worker.protocol import DEFAULT_WARMUP_STEPS

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
    #: Warm-up steps each worker runs and throws away before its measured steps (0: none).
    warmup: int = DEFAULT_WARMUP_STEPS
    #: Another checkout of topos to grade beside this one: a directory or a git ref.
    against: str | None = None
    #: Where to write one row per route as CSV, and as a Markdown table (`None`: nowhere).
    export_csv: str | None = None
    export_markdown: str | None = None


@dataclass
class GradePlan:
    """Validated options, and everything decided before the first worker starts."""

    options: GradeOptions
    data: str | None
    result_path: str
    #: Whether `result_path` is the default name (claimed exclusively, never replacing a file).
    default_path: bool
    baseline: dict[str, Any] | None
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


def _require_at_least_one(option: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToposUsageError(f"{option} must be a whole number of at least 1, not {value!r}")


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
    _require_at_least_one("--steps", options.steps)
    _require_at_least_one("--repeat", options.repeat)
    if options.threads is not None:
        _require_at_least_one("--threads", options.threads)
    warmup = options.warmup
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ToposUsageError(f"--warmup must be a whole number of at least 0, not {warmup!r}")
    if options.timeout is not None and not options.timeout > 0:
        raise ToposUsageError(
            f"--timeout must be a positive number of seconds, not {options.timeout}"
        )
    if options.against is not None:
        # A bad path or ref is a usage error now; the worktree is made when the grade runs.
        check_against(options.against)
    compare_settings = parse_tolerance(options.tolerance)
    data = data_directory(options.data)
    # A grade of remat at several budgets is a frontier, and its result is named so.
    command = "frontier" if options.budgets else "grade"
    default_path = default_result_path(options.workload, started, command=command)
    result_path = options.json_path or str(default_path)
    # Nothing is created yet: a usage error must leave no folder behind.
    check_destination(result_path, "--json")
    if options.github_benchmark is not None:
        if options.github_benchmark == "-" and result_path == "-":
            raise ToposUsageError("--json and --github-benchmark cannot both go to standard output")
        check_destination(options.github_benchmark, "--github-benchmark")
    # Each output must be a file of its own, and the baseline is read, never overwritten by
    # the benchmark list (a new result may replace it: that is a rolling baseline).
    for option, path in (
        ("--export-csv", options.export_csv),
        ("--export-markdown", options.export_markdown),
    ):
        if path is not None:
            if path == "-":
                raise ToposUsageError(f"{option} takes a file path, not '-'")
            check_destination(path, option)
    check_distinct(
        {
            "--json": result_path,
            "--github-benchmark": options.github_benchmark,
            "--export-csv": options.export_csv,
            "--export-markdown": options.export_markdown,
        }
    )
    check_distinct({"--baseline": options.baseline, "--export-csv": options.export_csv})
    check_distinct({"--baseline": options.baseline, "--export-markdown": options.export_markdown})
    check_distinct({"--baseline": options.baseline, "--github-benchmark": options.github_benchmark})
    baseline = None
    if options.baseline is not None:
        baseline = load_result(options.baseline)
        if baseline["workload"]["name"] != options.workload:
            raise IncomparableResultsError(
                f"--baseline {options.baseline} is a result of workload "
                f"{baseline['workload']['name']}, not {options.workload}"
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
            warmup=options.warmup,
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
            warmup=options.warmup,
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


def plan_against(plan: GradePlan, checkout: OtherCheckout) -> GradePlan:
    """`plan` with the other checkout's runs woven in: each route of this checkout beside
    the same route of the other, in a balanced order over the repeats (recorded,
    recorded@against, then recorded@against, recorded, ...), on the same data, steps,
    threads and warm-up."""
    theirs = {
        request.route: replace(request, checkout=checkout.path, holds=checkout.holds)
        for request in plan.requests
    }
    labels = [label for route in plan.options.routes for label in (route, f"{route}@")]
    requests = []
    for label, repeat in interleaved_order(labels, plan.options.repeat):
        route = label.rstrip("@")
        base = theirs[route] if label.endswith("@") else _own_request(plan, route)
        requests.append(replace(base, repeat=repeat))
    return replace(plan, requests=requests)


def _own_request(plan: GradePlan, route: str) -> WorkerRequest:
    """This checkout's planned request for `route` (its first; they differ by repeat only)."""
    return next(request for request in plan.requests if request.route == route)

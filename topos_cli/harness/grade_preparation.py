"""The plan of a grade: its options, validated up front, and the runs in a balanced order.

Everything is checked before the first worker starts (routes, counts, the data
directory, where the result goes, the baseline), so a usage error costs
nothing and leaves no folder behind.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from topos.budget_text import BudgetTextError, parse_budget
from topos.names import (
    BUILT_IN_WORKLOADS,
    DEFAULT_ROUTES,
    GRADE_ROUTES,
    UnknownNameError,
    check_route,
    check_workload_name,
    missing_native_route,
    missing_peer,
)
from topos_cli.harness.data_option import data_directory
from topos_cli.harness.other_checkout import OtherCheckout, SidePaths, check_against
from topos_cli.harness.report_child import reports_wanted
from topos_cli.harness.worker_environment import worker_environment
from topos_cli.harness.worker_request import WorkerRequest
from topos_cli.result.grade_result import GradeResult, ProjectFacts
from topos_cli.result.peer_tolerance import parse_peer_tolerance
from topos_cli.result.result_file import default_report_path, default_result_path, load_result
from topos_cli.result.tolerance import CompareSettings, parse_tolerance
from topos_cli.result.verdict_settings import VerdictSettings
from topos_cli.result.worker_facts import CodeFacts
from topos_cli.shared.bounds import (
    MOST_REPEATS,
    MOST_STEPS,
    MOST_THREADS,
    check_count,
    check_seconds,
)
from topos_cli.shared.errors import IncomparableResultsError, ToposUsageError
from topos_cli.shared.output_path import check_not_input, check_outputs
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
    #: `--repeat auto`'s time budget in seconds: from `repeat` rounds on, a round of
    #: repeats is added until every route's time is decisive or the budget would run out
    #: (`None`: exactly `repeat` rounds).
    repeat_budget: float | None = None
    #: A directory of real data files, or `None` (or `"synthetic"`) for the stand-in.
    data: str | None = None
    threads: int | None = None
    #: Where the result goes: a path, `-` for standard output, `None` for the default.
    json_path: str | None = None
    baseline: str | None = None
    #: `--tolerance` as typed (see `topos_cli.result.tolerance`), `None` for the defaults.
    tolerance: str | None = None
    #: `--peer-tolerance` as typed (see `topos_cli.result.peer_tolerance`), `None` for the
    #: defaults.
    peer_tolerance: str | None = None
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
    #: A frontier of a native workload (a PyTorch or JAX step): its points are its
    #: routes (`routes`: eager, checkpoint, compile-budget-0.5, ...), each a worker run.
    native_frontier: bool = False
    #: Warm-up steps each worker runs and throws away before its measured steps (0: none).
    warmup: int = DEFAULT_WARMUP_STEPS
    #: What each route is measured by besides its clock: `("instructions",)` counts the
    #: work of its measured steps under Valgrind (`harness.instruction_counting`).
    measure: tuple[str, ...] = ()
    #: Another checkout of the project to grade beside this one: a directory or a git ref
    #: of the working directory's repository.
    against: str | None = None
    #: Whether a change of loss bits against `against` fails the grade (exit 6).
    fail_on_bits_change: bool = False
    #: Where to write one row per route as CSV, and as a Markdown table (`None`: nowhere).
    export_csv: str | None = None
    export_markdown: str | None = None

    @property
    def exports(self) -> dict[str, str | None]:
        """Where each export goes, by the option that asked (`None`: not asked), in the
        order they are written: the options `render.exporters.EXPORTERS` offers."""
        return {
            "--github-benchmark": self.github_benchmark,
            "--export-csv": self.export_csv,
            "--export-markdown": self.export_markdown,
        }


@dataclass
class PreparedGrade:
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
    #: The workload's own name where the preflight told it, else the `--workload` spec.
    workload_name: str = ""
    #: Which code this side imports (the preflight's word), for `--against`.
    workload_code: CodeFacts | None = None
    #: The project graded: the working directory's repository, commit and dirty flag.
    project: ProjectFacts | None = None
    #: The thresholds the verdict applies (`--peer-tolerance` over the defaults).
    verdict_settings: VerdictSettings = field(default_factory=VerdictSettings)


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


def round_of_requests(preparation: PreparedGrade, repeat: int) -> list[WorkerRequest]:
    """One more round of the planned runs, numbered `repeat`, in the balanced order
    `interleaved_order` would give it (the first round's order, reversed on odd rounds),
    for `--repeat auto`; with `--against`, both checkouts' runs, interleaved."""
    first = [request for request in preparation.requests if request.repeat == 0]
    order = first if repeat % 2 == 0 else first[::-1]
    return [replace(request, repeat=repeat) for request in order]


def picture_path(result_path: str, workload: str) -> Path:
    """Where a frontier's picture goes: beside the result JSON, or in results/ when the
    JSON goes to standard output."""
    if result_path == "-":
        return default_result_path(workload, command="frontier").with_suffix(".svg")
    return Path(result_path).with_suffix(".svg")


def side_outputs(
    result_path: str, options: GradeOptions, name: str | None = None
) -> dict[str, str]:
    """The files a grade writes beside its result, by what names them in a message: the
    report drawn beside it (`default_report_path`), or a frontier's picture (`name`: the
    workload's own name, else the `--workload` spec, names one beside no result)."""
    if options.budgets or options.native_frontier:
        picture = picture_path(result_path, name or options.workload)
        return {"the picture beside the result": str(picture)}
    if result_path == "-" or not reports_wanted():
        return {}
    return {"the report beside the result": str(default_report_path(result_path))}


def prepare(
    options: GradeOptions, moment: datetime | None = None, named: str | None = None
) -> PreparedGrade:
    """Validates `options` and plans the runs; raises `ToposUsageError` (exit 2) on any problem.

    `named` is the workload's own name, when known (the preflight's), which names the
    default result file; else the `--workload` spec does."""
    started = moment or datetime.now(timezone.utc)
    try:
        check_workload_name(options.workload)
        if not options.routes:
            raise UnknownNameError(f"--routes names no route; routes are {', '.join(GRADE_ROUTES)}")
        # A workload not built in may be native (a PyTorch step): a name of no topos
        # route is judged against its own routes once the preflight has told them
        # (`fit_to_workload`), still before any worker starts.
        deferred = options.workload not in BUILT_IN_WORKLOADS
        for route in options.routes:
            if not (deferred and route not in GRADE_ROUTES):
                check_route(route)
        for route in options.routes:
            # A peer's framework is an optional extra: refused now, in one line, before
            # any worker starts (looked for, never imported: the parent stays light).
            missing = missing_peer(route)
            if missing is not None:
                raise UnknownNameError(missing)
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
    if options.repeat_budget is not None:
        check_seconds("--repeat auto's budget", options.repeat_budget)
    if options.threads is not None:
        check_count("--threads", options.threads, most=MOST_THREADS)
    # Steps thrown away before the measured ones: none is allowed, as many as a run has.
    check_count("--warmup", options.warmup, most=MOST_STEPS, least=0)
    if options.timeout is not None:
        check_seconds("--timeout", options.timeout)
    if options.against is not None:
        # A bad path or ref is a usage error now; the worktree is made when the grade runs.
        check_against(options.against)
    elif options.fail_on_bits_change:
        raise ToposUsageError("--fail-on-bits-change compares with --against: name a commit")
    compare_settings = parse_tolerance(options.tolerance)
    verdict_settings = parse_peer_tolerance(options.peer_tolerance)
    data = data_directory(options.data)
    # A grade of remat at several budgets is a frontier, and its result is named so.
    command = "frontier" if options.budgets or options.native_frontier else "grade"
    name = named or options.workload
    default_path = default_result_path(name, started, command=command)
    result_path = options.json_path or str(default_path)
    # Nothing is created yet: a usage error must leave no folder behind. Every file the
    # grade will write is checked by the one guard: the result, the benchmark list, the
    # exports, and the report (a frontier: the picture) drawn beside the result. Two of
    # them on one path would clobber each other, and only the result may replace the
    # baseline it is compared with (that is a rolling baseline); the others must not
    # destroy it.
    exports = options.exports
    beside = side_outputs(result_path, options, name)
    # Only the JSON ones may go to standard output: the result and the benchmark list.
    standard_output = ("--json", "--github-benchmark")
    check_outputs({"--json": result_path, **exports, **beside}, standard_output=standard_output)
    check_not_input({**exports, **beside}, {"--baseline": options.baseline})
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
    return PreparedGrade(
        options=options,
        data=data,
        result_path=result_path,
        default_path=options.json_path is None,
        baseline=baseline,
        compare_settings=compare_settings,
        verdict_settings=verdict_settings,
        requests=requests,
        environment=worker_environment(options.threads),
        started=started,
        workload_name=name,
    )


def fit_to_workload(
    options: GradeOptions, framework: str | None, offered: Sequence[str], defaults: Sequence[str]
) -> GradeOptions:
    """`options` checked against what the preflight told of the workload: for a native one
    (`framework`, the routes it `offered`, its `defaults` in place of topos's default
    routes), each route must be one it offers, its framework installed and, for a
    compiling route, a C++ compiler at hand; for topos's own, each route one of topos's.
    Raises `ToposUsageError` in one line naming the route, before any worker starts."""
    try:
        if framework is None:
            for route in options.routes:
                check_route(route)
            return options
        routes = tuple(defaults) if options.routes == DEFAULT_ROUTES else options.routes
        for route in routes:
            missing = missing_native_route(route, framework, list(offered))
            if missing is not None:
                raise UnknownNameError(f"--workload {options.workload}: {missing}")
    except UnknownNameError as error:
        raise ToposUsageError(str(error)) from None
    if options.against is not None:
        raise ToposUsageError(
            f"--workload {options.workload} is a {framework} step: --against grades "
            f"topos's own routes"
        )
    if options.budgets:
        # Its memory settings are routes of its own, which `topos frontier` grades as
        # points (`commands.native_frontier`), not remat budgets.
        raise ToposUsageError(
            f"--workload {options.workload} is a {framework} step: remat budgets are "
            f"topos's own; its frontier is topos frontier's (a PyTorch step's activation "
            f"memory budgets, a JAX step's checkpoint policies)"
        )
    return replace(options, routes=routes)


def plan_against(
    preparation: PreparedGrade, checkout: OtherCheckout, paths: SidePaths | None = None
) -> PreparedGrade:
    """`preparation` with the other checkout's runs woven in: each route of this checkout beside
    the same route of the other, in a balanced order over the repeats (recorded,
    recorded@against, then recorded@against, recorded, ...), on the same data, steps,
    threads and warm-up; the other's workers start where `paths` says (by default, in
    the checkout, with it first on the path)."""
    if paths is None:
        rest = preparation.environment.get("PYTHONPATH")
        paths = SidePaths(os.pathsep.join([checkout.path, *filter(None, [rest])]), checkout.path)
    theirs = {
        request.route: replace(
            request,
            checkout=checkout.path,
            holds=checkout.holds,
            pythonpath=paths.pythonpath,
            working_directory=paths.working_directory,
            workload=paths.workload or request.workload,
        )
        for request in preparation.requests
    }
    labels = [label for route in preparation.options.routes for label in (route, f"{route}@")]
    requests = []
    for label, repeat in interleaved_order(labels, preparation.options.repeat):
        route = label.rstrip("@")
        base = theirs[route] if label.endswith("@") else _own_request(preparation, route)
        requests.append(replace(base, repeat=repeat))
    return replace(preparation, requests=requests)


def _own_request(preparation: PreparedGrade, route: str) -> WorkerRequest:
    """This checkout's planned request for `route` (its first; they differ by repeat only)."""
    return next(request for request in preparation.requests if request.route == route)

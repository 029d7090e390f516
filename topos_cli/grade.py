"""Grade: run every route of a workload in a worker of its own, then judge and record them.

`run_grade(options)` is `topos grade` without the command line:

1. *Validate* everything up front, before any worker starts: the routes, the
   step and repeat counts, the data directory, that the result file can be
   written, and that a baseline is a topos result of this schema and
   workload. Any problem is a `ToposUsageError` (one line, exit 2).
2. *Run* the routes one at a time, in a balanced interleaved order over the
   repeats (engine, recorded, recorded, engine, ...), so a machine that
   drifts during the grade hits every route alike. A live display (or plain
   progress lines) shows each run. A worker that reports a data or workload
   error before it is ready stops the grade: every other run would fail the
   same way.
3. *Judge*: the verdict (parity, speed, memory, noise).
4. *Record*: the result file, written atomically before it is compared with
   the baseline or anything is printed (a broken pipe or a bad baseline must
   not lose an hour's grade; `result_destination` says where it goes), the
   github-action-benchmark file if asked, then the table.

Ctrl-C and SIGTERM end the running worker and its process group, and the
partial result is written with status `interrupted` (exit 130).

Exit statuses: 0 every route finished and parity holds; 1 a route failed,
timed out or met a non-finite loss; 2 a usage or data error, or the result
could not be written where asked; 3 parity is broken; 4 the baseline shows a
significant regression beyond the tolerance; 130 interrupted. When several
apply the first of 130, 2, 3, 1, 4 wins.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from topos_cli.compare import CompareSettings, Comparison, compare_results
from topos_cli.display.progress import LiveProgress, PlainProgress
from topos_cli.display.report import print_comparison, print_verdict
from topos_cli.display.tables import use_plain_output
from topos_cli.display.units import format_bytes
from topos_cli.errors import IncomparableResultsError, ToposError, ToposUsageError
from topos_cli.exit_status import ExitStatus, most_severe
from topos_cli.host import host_facts
from topos_cli.interruption import interruptions_raised, start_raising, stop_raising
from topos_cli.monitor import (
    SAMPLE_INTERVAL_SECONDS,
    WorkerMonitor,
    WorkerObserver,
    WorkerRequest,
    environment_facts,
    worker_environment,
)
from topos_cli.process_tree import adopt_orphans
from topos_cli.result_destination import (
    Saved,
    check_destination,
    check_distinct,
    last_resort_text,
    save_result,
)
from topos_cli.result_file import (
    compose_result,
    default_result_path,
    load_result,
    write_github_benchmark,
)
from topos_cli.routes import ROUTES
from topos_cli.tolerance import parse_tolerance
from topos_cli.verdict import RunRecord, Verdict, decide_verdict
from topos_cli.workload_names import check_workload_name

#: How long one run of one route may take before it is killed: generous, an hour.
DEFAULT_TIMEOUT_SECONDS = 3600.0

#: How close the measured training delta should come to the predicted live volume.
PREDICTION_TOLERANCE = 0.10

#: What the result file says about how memory was measured (README has the long story).
MEMORY_METHOD = {
    "ready": "data loaded, plan lowered, one warm-up step of the route run and thrown away",
    "peak": "VmHWM at the end of the measured steps, after resetting it at ready "
    "(writing 5 to /proc/self/clear_refs); psutil sampling where /proc is missing",
    "training_delta": "peak minus VmRSS at ready",
    "cross_check": "ru_maxrss from os.wait4, which includes start-up and shutdown",
}


@dataclass(frozen=True)
class GradeOptions:
    """What `topos grade` was asked to do; `run_grade` validates it."""

    workload: str = "cifar10"
    steps: int = 300
    routes: tuple[str, ...] = ROUTES
    repeat: int = 1
    #: A directory of real data files, or `None` (or `"synthetic"`) for the stand-in.
    data: str | None = None
    threads: int | None = None
    #: Where the result goes: a path, `-` for standard output, `None` for the default.
    json_path: str | None = None
    baseline: str | None = None
    #: `--tolerance` as typed (see `topos_cli.tolerance`), `None` for the defaults.
    tolerance: str | None = None
    timeout: float | None = DEFAULT_TIMEOUT_SECONDS
    markdown: bool = False
    github_benchmark: str | None = None


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


def _data_directory(data: str | None) -> str | None:
    """`None` for the synthetic stand-in, else the directory, which must exist."""
    if data is None or data.strip() in ("", "synthetic"):
        return None
    path = Path(data)
    if not path.exists():
        raise ToposUsageError(f"{data}: no such directory (--data names a folder, or 'synthetic')")
    if not path.is_dir():
        raise ToposUsageError(f"{data}: not a directory (--data names a folder, or 'synthetic')")
    return str(path.resolve())


def prepare(options: GradeOptions, moment: datetime | None = None) -> GradePlan:
    """Validates `options` and plans the runs; raises `ToposUsageError` (exit 2) on any problem."""
    started = moment or datetime.now(timezone.utc)
    check_workload_name(options.workload)
    if not options.routes:
        raise ToposUsageError(f"--routes names no route; routes are {', '.join(ROUTES)}")
    for route in options.routes:
        if route not in ROUTES:
            raise ToposUsageError(f"unknown route {route!r}; routes are {', '.join(ROUTES)}")
    _require_at_least_one("--steps", options.steps)
    _require_at_least_one("--repeat", options.repeat)
    if options.threads is not None:
        _require_at_least_one("--threads", options.threads)
    if options.timeout is not None and not options.timeout > 0:
        raise ToposUsageError(
            f"--timeout must be a positive number of seconds, not {options.timeout}"
        )
    compare_settings = parse_tolerance(options.tolerance)
    data = _data_directory(options.data)
    result_path = options.json_path or str(default_result_path(options.workload, started))
    # Nothing is created yet: a usage error must leave no folder behind.
    check_destination(result_path, "--json")
    if options.github_benchmark is not None:
        if options.github_benchmark == "-" and result_path == "-":
            raise ToposUsageError("--json and --github-benchmark cannot both go to standard output")
        check_destination(options.github_benchmark, "--github-benchmark")
    # Each output must be a file of its own, and the baseline is read, never overwritten by
    # the benchmark list (a new result may replace it: that is a rolling baseline).
    check_distinct({"--json": result_path, "--github-benchmark": options.github_benchmark})
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
        )
        for route, repeat in interleaved_order(options.routes, options.repeat)
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


def usage_error_of(result: Mapping[str, Any], workload: str) -> str | None:
    """The one-line usage or data error a run reported before it was ready, if any."""
    facts = result.get("facts") or {}
    error = facts.get("error")
    if result.get("status") != "failed" or not error or facts.get("ready"):
        return None
    if error.get("kind") not in ("data", "workload"):
        return None
    message = error.get("message") or error.get("type") or "error"
    if error.get("type") in ("ShapeError", "GraphError"):
        where = error.get("where")
        message = f"workload {workload!r} failed to record: {message}" + (
            f" (at {where})" if where else ""
        )
    return message


@dataclass
class GradeRecord:
    """What a grade gathered: the runs, and how the grade itself ended."""

    results: list[dict[str, Any]] = field(default_factory=list)
    interrupted_by: str | None = None
    usage_error: str | None = None


def _choose_display(plan: GradePlan) -> PlainProgress | LiveProgress:
    """A live display on a terminal (and without NO_COLOR), plain lines on stderr otherwise."""
    repeats = plan.options.repeat
    live = not use_plain_output(sys.stdout) and not use_plain_output(sys.stderr)
    if live:
        return LiveProgress(sys.stderr, plan.requests, repeats)
    return PlainProgress(sys.stderr, plan.requests, repeats)


def run_routes(plan: GradePlan, display: WorkerObserver | None = None) -> GradeRecord:
    """Runs every planned request, one at a time; stops at an interrupt or a usage error."""
    record = GradeRecord()
    display = display if display is not None else _choose_display(plan)
    current: WorkerMonitor | None = None
    try:
        try:
            # An interrupt deferred since the command began lands here, with a result to write.
            start_raising()
            with display:  # type: ignore[attr-defined]
                for request in plan.requests:
                    current = WorkerMonitor(request, plan.environment, display)
                    record.results.append(current.run())
                    record.usage_error = usage_error_of(record.results[-1], plan.options.workload)
                    if record.usage_error is not None:
                        break
        finally:
            # From here on a signal is ignored: what was gathered is judged and written.
            stop_raising()
    except KeyboardInterrupt as error:  # Interrupted (SIGINT or SIGTERM) is one
        record.interrupted_by = getattr(error, "signal_name", "SIGINT")
        kept = current is not None and current.result is not None
        if kept and not any(result is current.result for result in record.results):
            record.results.append(current.result)
    return record


def _first_ready(results: Sequence[Mapping[str, Any]], route: str | None = None) -> dict | None:
    """The `ready` facts of the first run (of `route`, if given) that reached ready."""
    for result in results:
        ready = (result.get("facts") or {}).get("ready")
        if ready and (route is None or result["route"] == route):
            return ready
    return None


def _route_facts(results: Sequence[Mapping[str, Any]], routes: Sequence[str]) -> dict[str, Any]:
    """Per route, what its worker said at ready: plan summary, live volume, node counts."""
    facts = {}
    for route in routes:
        ready = _first_ready(results, route)
        if ready is None:
            continue
        facts[route] = {
            key: ready.get(key)
            for key in (
                "posture",
                "shards",
                "plan",
                "live_volume",
                "forward_nodes",
                "gradient_nodes",
                "lower_seconds",
                "warm_up_seconds",
                "high_water_source",
            )
        }
    return facts


def memory_predictions(
    route_facts: Mapping[str, Any], verdict: Verdict | None
) -> list[dict[str, Any]]:
    """Per route, the plan's predicted training bytes (arena, fresh roots and the engine
    sweep's peak; the live volume for workers that do not say) beside the measured
    training delta."""
    predictions = []
    for route, facts in route_facts.items():
        volume = facts.get("live_volume") or {}
        live = volume.get("peak_bytes")
        predicted = volume.get("predicted_training_bytes", live)
        measured = None
        if verdict is not None:
            try:
                memory = verdict.route(route).memory
            except KeyError:
                memory = None
            measured = None if memory is None else memory.training_delta_bytes
        ratio = measured / predicted if measured is not None and predicted else None
        predictions.append(
            {
                "route": route,
                "predicted_live_bytes": live,
                "predicted_training_bytes": predicted,
                "measured_training_delta_bytes": measured,
                "ratio": ratio,
                "within_tolerance": None
                if ratio is None
                else abs(ratio - 1.0) <= PREDICTION_TOLERANCE,
                "tolerance": PREDICTION_TOLERANCE,
            }
        )
    return predictions


def describe_predictions(predictions: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per route: predicted live volume against the measured training delta."""
    lines = []
    for prediction in predictions:
        line = (
            f"memory: {prediction['route']} predicted training Δ "
            f"{format_bytes(prediction.get('predicted_training_bytes'))} (live volume "
            f"{format_bytes(prediction['predicted_live_bytes'])}), measured "
            f"{format_bytes(prediction['measured_training_delta_bytes'])}"
        )
        if prediction["ratio"] is not None:
            line += f" ({prediction['ratio']:.2f}x)"
        lines.append(line)
    return lines


def _data_facts(plan: GradePlan, results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Which data the grade used: what was asked for, and what the worker loaded."""
    ready = _first_ready(results)
    dataset = dict((ready or {}).get("dataset") or {})
    return {"requested": plan.data or "synthetic", **dataset}


def describe_data(data: Mapping[str, Any]) -> str:
    """E.g. `data: cifar10, synthetic (fingerprint 8bc00cf64ce4)`."""
    if "name" not in data:
        return f"data: {data.get('requested')} (not loaded)"
    fingerprint = str(data.get("fingerprint") or "")[:12]
    source = data.get("source")
    if source == "synthetic":
        source_text = "synthetic stand-in"
    else:
        source_text = f"{data.get('format')} files in {source}"
    return f"data: {data['name']}, {source_text} (fingerprint {fingerprint})"


def compose_grade_result(
    plan: GradePlan,
    record: GradeRecord,
    host: Mapping[str, Any],
    verdict: Verdict | None,
    comparison: Comparison | None,
    exit_status: int,
) -> dict[str, Any]:
    """The result file's object: `compose_result`'s shape, plus what a grade adds."""
    options = plan.options
    ready = _first_ready(record.results)
    host = {
        **host,
        "numerics": None if ready is None else ready.get("numerics"),
        "threads": options.threads,
    }
    workload = {"name": options.workload, "data": _data_facts(plan, record.results)}
    settings = {
        "routes": list(options.routes),
        "repeat": options.repeat,
        "order": [[request.route, request.repeat] for request in plan.requests],
        "threads": options.threads,
        "timeout_seconds": options.timeout,
        "data": plan.data or "synthetic",
        "environment": environment_facts(plan.environment),
        "sample_interval_seconds": SAMPLE_INTERVAL_SECONDS,
        "memory_method": MEMORY_METHOD,
        "tolerance": plan.compare_settings.to_json(),
        "baseline": options.baseline,
    }
    result = compose_result(
        workload=workload,
        host=host,
        steps=options.steps,
        repeats=[RunRecord.from_dict(result) for result in record.results],
        verdict=verdict,
        settings=settings,
        created=plan.started,
    )
    if record.interrupted_by is not None:
        status = "interrupted"
    elif record.usage_error is not None:
        status = "error"
    else:
        status = "complete"
    route_facts = _route_facts(record.results, options.routes)
    ran = {(result["route"], result["repeat"]) for result in record.results}
    result.update(
        {
            "status": status,
            "exit_status": int(exit_status),
            "error": record.usage_error,
            "interrupted": None
            if record.interrupted_by is None
            else {
                "signal": record.interrupted_by,
                "not_run": [
                    [request.route, request.repeat]
                    for request in plan.requests
                    if (request.route, request.repeat) not in ran
                ],
            },
            "routes": route_facts,
            "memory_prediction": memory_predictions(route_facts, verdict),
            "baseline": None
            if comparison is None
            else {"path": options.baseline, "comparison": comparison.to_json()},
        }
    )
    if verdict is None:
        result.pop("verdict")
    return result


def grade_exit_status(
    record: GradeRecord, verdict: Verdict | None, comparison: Comparison | None
) -> int:
    """The grade's exit status, by the README's table and its order of precedence."""
    return most_severe(
        (
            ExitStatus.INTERRUPTED if record.interrupted_by is not None else None,
            ExitStatus.USAGE if record.usage_error is not None else None,
            verdict.exit_status if verdict is not None else ExitStatus.ROUTE_FAILED,
            None if comparison is None else comparison.exit_status,
        )
    )


def finish_grade(
    plan: GradePlan,
    record: GradeRecord,
    host: Mapping[str, Any],
    *,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """Judges, writes and prints what `run_routes` gathered; returns the exit status."""
    options = plan.options
    verdict = None
    if record.results:
        load = host.get("load_average")
        verdict = decide_verdict(
            record.results,
            load_average=load[0] if load else None,
            cores=host.get("available_cores"),
        )
    complete = record.interrupted_by is None and record.usage_error is None
    exit_status = grade_exit_status(record, verdict, None)
    result = compose_grade_result(plan, record, host, verdict, None, exit_status)
    # The result first, before it is compared with anything or printed: whatever goes
    # wrong from here on (a baseline, the terminal), the grade is not lost.
    saved = save_result(plan.result_path, result, default=plan.default_path)
    comparison = None
    if complete and plan.baseline is not None and verdict is not None:
        try:
            comparison = compare_results(
                plan.baseline,
                result,
                settings=plan.compare_settings,
                old_source=str(options.baseline),
                new_source="this grade",
            )
        except ToposError as error:  # the baseline was checked when loaded; still, say so
            stderr.write(f"topos: error: cannot compare with --baseline: {error}\n")
        else:
            exit_status = grade_exit_status(record, verdict, comparison)
            result = compose_grade_result(plan, record, host, verdict, comparison, exit_status)
            if saved.path is not None and saved.error is None:
                saved = save_result(plan.result_path, result, default=False, replace_own=saved.path)
    if options.github_benchmark is not None:
        try:
            write_github_benchmark(options.github_benchmark, result)
        except ToposError as error:
            stderr.write(f"topos: error: --github-benchmark: {error}\n")
            exit_status = most_severe((exit_status, ExitStatus.USAGE))
    table = stderr if plan.result_path == "-" else stdout
    if record.usage_error is None and verdict is not None:
        print_verdict(verdict, file=table, markdown=options.markdown)
        notes = [describe_data(result["workload"]["data"])]
        notes += describe_predictions(result["memory_prediction"])
        table.write("\n" + "\n".join(notes) + "\n")
        if comparison is not None:
            table.write("\n")
            print_comparison(comparison, file=table, markdown=options.markdown)
    table.flush()
    exit_status = _report_saved(saved, result, exit_status, stderr)
    if record.interrupted_by is not None:
        stderr.write(f"topos: interrupted by {record.interrupted_by}; partial results written\n")
    stderr.flush()
    if record.usage_error is not None:
        raise ToposUsageError(record.usage_error)
    return exit_status


def _report_saved(saved: Saved, result: Mapping[str, Any], exit_status: int, stderr: TextIO) -> int:
    """Says where the result went (and why not where asked); returns the exit status."""
    if saved.path is not None and saved.path != "-":
        stderr.write(f"results: {saved.path}\n")
    if saved.kept is not None:
        stderr.write(
            f"topos: {saved.kept} holds a complete result, kept; this "
            f"{result.get('status')} grade's result is beside it\n"
        )
    if saved.error is None:
        return exit_status
    where = (
        f"the result was saved to {saved.path} instead"
        if saved.path is not None
        else "it could be saved nowhere, so it follows here"
    )
    stderr.write(f"topos: error: {saved.error}; {where}\n")
    if saved.path is None:
        stderr.write(last_resort_text(result))
    return most_severe((exit_status, ExitStatus.USAGE))


def run_grade(
    options: GradeOptions,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    display: WorkerObserver | None = None,
) -> int:
    """Validates, runs, judges, records and prints a grade; returns its exit status.

    Raises `ToposUsageError` for bad options (before any worker starts) and
    for a data or workload error a worker reported (after the result is
    written).
    """
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    plan = prepare(options)
    # Orphans of the workers come back to this process, to be ended (see process_tree).
    adopt_orphans()
    host = host_facts()
    with interruptions_raised():
        # run_routes returns with signals ignored, so judging and writing cannot be cut short.
        record = run_routes(plan, display)
        return finish_grade(plan, record, host, stdout=stdout, stderr=stderr)

"""`topos grade` without its command line: plan, run every route, judge, record, print.

The routes run one at a time, each in a worker of its own (`monitor`), two workers
loading at once and each then given its turn to warm up and train alone; the
result is written before it is compared with a baseline or printed, so a
broken pipe or a bad baseline cannot lose a grade; Ctrl-C and SIGTERM end the
running worker and write the partial result. The README says what a grade
promises (the exit-status table, where the result goes).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from topos_cli.compare import Comparison, compare_results
from topos_cli.display.progress import LiveProgress, PlainProgress
from topos_cli.display.report import print_comparison, print_verdict
from topos_cli.display.tables import use_plain_output
from topos_cli.errors import ToposError, ToposUsageError
from topos_cli.exit_status import ExitStatus, most_severe
from topos_cli.grade_plan import GradeOptions, GradePlan, prepare
from topos_cli.grade_result import (
    GradeRecord,
    compose_grade_result,
    describe_data,
    describe_predictions,
    describe_remat,
)
from topos_cli.host import host_facts
from topos_cli.interruption import interruptions_raised, start_raising, stop_raising
from topos_cli.monitor import WorkerMonitor, WorkerObserver
from topos_cli.process_tree import adopt_orphans
from topos_cli.report_child import ReportChild, ReportDrawing, reports_wanted
from topos_cli.result_destination import Saved, last_resort_text, save_result
from topos_cli.result_file import write_github_benchmark
from topos_cli.verdict import RunRecord, Verdict, decide_verdict


def usage_error_of(result: RunRecord, workload: str) -> str | None:
    """The one-line usage or data error a run reported before it was ready, if any."""
    error = result.facts.get("error")
    if result.status != "failed" or not error or result.facts.get("ready"):
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


def choose_display(plan: GradePlan) -> PlainProgress | LiveProgress:
    """A live display on a terminal (and without NO_COLOR), plain lines on stderr otherwise."""
    repeats = plan.options.repeat
    live = not use_plain_output(sys.stdout) and not use_plain_output(sys.stderr)
    if live:
        return LiveProgress(sys.stderr, plan.requests, repeats)
    return PlainProgress(sys.stderr, plan.requests, repeats)


#: What a caller may make of each run before it is kept: the run (perhaps relabelled),
#: or None to set it aside.
Admission = Callable[[RunRecord, Any], "RunRecord | None"]


def run_routes(
    plan: GradePlan,
    display: WorkerObserver | None = None,
    admit: Admission | None = None,
    before_turn: Callable[[], None] | None = None,
) -> GradeRecord:
    """Runs every planned request, one at a time; stops at an interrupt or a usage error.
    `admit(run, request)` may relabel a run or set it aside (the frontier does both);
    `before_turn()` is called before each worker warms up and trains."""
    record = GradeRecord()
    display = display if display is not None else choose_display(plan)
    current: WorkerMonitor | None = None
    following: WorkerMonitor | None = None
    requests = plan.requests
    try:
        try:
            # An interrupt deferred since the command began lands here, with a result to write.
            start_raising()
            with display:  # type: ignore[attr-defined]
                for index, request in enumerate(requests):
                    if following is not None:
                        current, following, beside = following, None, None
                    else:
                        # Two workers load at once (interpreter, imports, data, lowering:
                        # nothing measured), then warm up and train one at a time.
                        current = WorkerMonitor(request, plan.environment, display, hold=True)
                        current.start()
                        if index + 1 < len(requests):
                            following = WorkerMonitor(
                                requests[index + 1], plan.environment, display, hold=True
                            )
                            following.start()
                        beside = following
                    result = current.run(beside, before_turn)
                    if admit is not None:
                        result = admit(result, request)
                        if result is None:
                            continue
                    record.results.append(result)
                    record.usage_error = usage_error_of(result, plan.options.workload)
                    if record.usage_error is not None:
                        break
        finally:
            # A worker started and never run (the next of a pair, or one whose start was
            # interrupted) ends here, with no record.
            for monitor in (current, following):
                if monitor is not None:
                    monitor.abandon()
            # From here on a signal is ignored: what was gathered is judged and written.
            stop_raising()
    except KeyboardInterrupt as error:  # Interrupted (SIGINT or SIGTERM) is one
        record.interrupted_by = getattr(error, "signal_name", "SIGINT")
        kept = current is not None and current.result is not None
        if kept and not any(result is current.result for result in record.results):
            result = current.result if admit is None else admit(current.result, current.request)
            if result is not None and not any(run is result for run in record.results):
                record.results.append(result)
    return record


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


def judge_record(record: GradeRecord, host: Mapping[str, Any]) -> Verdict | None:
    """The verdict on what `run_routes` gathered, on this host's load and cores (None
    when no route ran)."""
    if not record.results:
        return None
    load = host.get("load_average")
    return decide_verdict(
        record.results,
        load_average=load[0] if load else None,
        cores=host.get("available_cores"),
    )


def end_grade(record: GradeRecord, stderr: TextIO) -> None:
    """A grade's last words: says it was interrupted, if so, and raises a usage error a
    worker reported (the result already written)."""
    if record.interrupted_by is not None:
        stderr.write(f"topos: interrupted by {record.interrupted_by}; partial results written\n")
    stderr.flush()
    if record.usage_error is not None:
        raise ToposUsageError(record.usage_error)


def finish_grade(
    plan: GradePlan,
    record: GradeRecord,
    host: Mapping[str, Any],
    *,
    stdout: TextIO,
    stderr: TextIO,
    report_child: ReportChild | None = None,
) -> int:
    """Judges, writes and prints what `run_routes` gathered; returns the exit status.
    `report_child`, started with the grade, draws the report if it is alive."""
    options = plan.options
    verdict = judge_record(record, host)
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
    drawing = None
    if record.results and record.usage_error is None and record.interrupted_by is None:
        # The drawing child draws while the verdict is printed (both cores are idle now).
        drawing = _start_report(saved, report_child)
    table = stderr if plan.result_path == "-" else stdout
    if record.usage_error is None and verdict is not None:
        print_verdict(verdict, file=table, markdown=options.markdown)
        notes = [describe_data(result["workload"]["data"])]
        notes += describe_predictions(result["memory_prediction"])
        notes += describe_remat(result["routes"])
        table.write("\n" + "\n".join(notes) + "\n")
        if comparison is not None:
            table.write("\n")
            print_comparison(comparison, file=table, markdown=options.markdown)
    table.flush()
    exit_status = _report_saved(saved, result, exit_status, stderr)
    if drawing is not None:
        stderr.flush()  # the results: line first, while the report is drawn
        report_path = drawing.finish(stderr)
        if report_path is not None:
            stderr.write(f"report: {report_path}\n")
    end_grade(record, stderr)
    return exit_status


def _start_report(saved: Saved, child: ReportChild | None) -> ReportDrawing | None:
    """Starts drawing the HTML report beside the written result, in a child process
    (`child`, if it is alive); None when no report is wanted or there is no file."""
    if saved.path is None or saved.path == "-" or not reports_wanted():
        return None
    return ReportDrawing(saved.path, child)


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
    written). A grade with remat budgets (`options.budgets`) is a frontier: its points
    are run and its result finished by `topos_cli.frontier`.
    """
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    plan = prepare(options)
    if options.check:
        from topos_cli.check import check_before_grade

        table = stderr if plan.result_path == "-" else stdout
        status = check_before_grade(options.workload, plan.data, stdout=table, stderr=stderr)
        if status != ExitStatus.OK:
            return status
    # Orphans of the workers come back to this process, to be ended (see process_tree).
    adopt_orphans()
    host = host_facts()
    with interruptions_raised():
        # run_routes returns with signals ignored, so judging and writing cannot be cut short.
        if options.budgets:
            from topos_cli.frontier import grade_points  # it builds on this module

            ReportChild.end_early()
            return grade_points(plan, host, display, stdout, stderr)
        # The report's drawing child loads while the workers do (see ReportChild).
        child = None
        if reports_wanted() and plan.result_path != "-":
            child = ReportChild.start()
        else:
            ReportChild.end_early()
        try:
            record = run_routes(plan, display, before_turn=child.pause if child else None)
            if child is not None:
                child.resume()  # it finishes loading while the verdict is reached
            return finish_grade(
                plan, record, host, stdout=stdout, stderr=stderr, report_child=child
            )
        finally:
            if child is not None:
                child.close()

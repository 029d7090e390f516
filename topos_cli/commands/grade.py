"""`topos grade` without its command line: plan, run every route, judge, record, print.

The routes run one at a time, each in a worker of its own (`monitor`), two workers
loading at once and each then given its turn to warm up and train alone; the
result is written before it is compared with a baseline or printed, so a
broken pipe or a bad baseline cannot lose a grade; Ctrl-C and SIGTERM end the
running worker and write the partial result. The README says what a grade
promises (the exit-status table, where the result goes).
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from topos_cli.commands.result_composition import compose_grade_result
from topos_cli.harness.grade_preparation import (
    GradeOptions,
    PreparedGrade,
    fit_to_workload,
    plan_against,
    prepare,
)
from topos_cli.harness.host import host_facts
from topos_cli.harness.lowered_schedules import with_lowered_schedules
from topos_cli.harness.other_checkout import OtherCheckout, other_checkout, side_paths
from topos_cli.harness.process_tree import adopt_orphans
from topos_cli.harness.project import find_project
from topos_cli.harness.report_child import ReportChild, ReportDrawing, reports_wanted
from topos_cli.harness.result_destination import (
    Saved,
    incomplete_kind,
    last_resort_text,
    save_result,
)
from topos_cli.harness.route_runner import GatheredRepeats, run_routes
from topos_cli.harness.side_code import same_code_ran, side_code
from topos_cli.harness.worker_environment import peer_environment
from topos_cli.harness.worker_observer import WorkerObserver
from topos_cli.harness.workload_preflight_run import PreflightOutcome, preflight_workload
from topos_cli.judge.against import (
    CheckoutComparison,
    compare_checkouts,
    is_against,
    sides_line,
)
from topos_cli.judge.compare import Comparison, compare_results
from topos_cli.judge.verdict import Verdict, decide_verdict
from topos_cli.render.against_lines import against_lines
from topos_cli.render.comparison_table import print_comparison
from topos_cli.render.exporters import EXPORTERS, ExportedGrade, write_export
from topos_cli.render.result_description import (
    describe_data,
    describe_predictions,
    describe_remat,
)
from topos_cli.render.tables import print_lines
from topos_cli.render.verdict_table import print_verdict
from topos_cli.result.grade_result import AgainstFacts, GradeResult, HostFacts
from topos_cli.result.repeat import Repeat
from topos_cli.result.verdict_settings import VerdictSettings
from topos_cli.shared.errors import ToposError, ToposUsageError
from topos_cli.shared.exit_status import ExitStatus, most_severe
from topos_cli.shared.interruption import interruptions_raised
from topos_cli.worker.protocol import DEFAULT_WARMUP_STEPS


def grade_exit_status(
    gathered: GatheredRepeats,
    verdict: Verdict | None,
    comparison: Comparison | None,
    against: CheckoutComparison | None = None,
) -> int:
    """The grade's exit status, by the README's table and its order of precedence (a
    regression against `--against`'s checkout is 4, as one against `--baseline`)."""
    return most_severe(
        (
            ExitStatus.INTERRUPTED if gathered.interrupted_by is not None else None,
            ExitStatus.USAGE if gathered.usage_error is not None else None,
            verdict.exit_status if verdict is not None else ExitStatus.ROUTE_FAILED,
            None if comparison is None else comparison.exit_status,
            None if against is None else against.exit_status,
        )
    )


def judge_gathered(
    gathered: GatheredRepeats, host: HostFacts, settings: VerdictSettings | None = None
) -> Verdict | None:
    """The verdict on what `run_routes` gathered, on this host's load and cores, with
    `settings` (`--peer-tolerance` over the defaults; None when no route ran)."""
    if not gathered.results:
        return None
    load = host.load_average
    return decide_verdict(
        gathered.results,
        settings=settings,
        load_average=load[0] if load else None,
        cores=host.available_cores,
    )


def end_grade(gathered: GatheredRepeats, stderr: TextIO) -> None:
    """A grade's last words: says it was interrupted, if so, and raises a usage error a
    worker reported (the result already written)."""
    if gathered.interrupted_by is not None:
        stderr.write(f"topos: interrupted by {gathered.interrupted_by}; partial results written\n")
    stderr.flush()
    if gathered.usage_error is not None:
        raise ToposUsageError(gathered.usage_error)


def describe_counts(result: GradeResult) -> list[str]:
    """The grade's lines about its counted work (`--measure instructions`)."""
    from topos_cli.judge.count_judgement import BLIND_SPOTS, counts_line, kernel_bits_note

    counts = list(result.counts or [])
    reference = result.verdict.reference if result.verdict is not None else None
    first_bits: dict[str, list[int]] = {}
    for run in result.repeats:
        if run.status == "ok":
            first_bits.setdefault(run.route, [int(bits) for bits in run.loss_bits])
    lines = counts_line(counts, reference or "engine")
    lines += kernel_bits_note(counts, first_bits)
    if any(count.status == "counted" for count in counts):
        lines.append(BLIND_SPOTS)
    return lines


def finish_grade(
    preparation: PreparedGrade,
    gathered: GatheredRepeats,
    host: HostFacts,
    *,
    stdout: TextIO,
    stderr: TextIO,
    report_child: ReportChild | None = None,
    checkout: OtherCheckout | None = None,
) -> int:
    """Judges, writes and prints what `run_routes` gathered; returns the exit status.
    `report_child`, started with the grade, draws the report if it is alive; `checkout`
    is `--against`'s, whose runs are set apart and compared with this checkout's."""
    options = preparation.options
    gathered, other_repeats = _set_apart(gathered, checkout)
    sides = {}
    if checkout is not None:
        sides = {"this": side_code(gathered.results), "other": side_code(other_repeats)}
        same = same_code_ran(checkout.requested, sides["this"], sides["other"])
        if same is not None and gathered.usage_error is None:
            # Never judged: the two sides ran the same code (a path not mapped, say).
            gathered = dataclasses.replace(gathered, usage_error=same)
    verdict = judge_gathered(gathered, host, preparation.verdict_settings)
    complete = gathered.interrupted_by is None and gathered.usage_error is None
    against = None
    if checkout is not None and complete and gathered.results:
        against = compare_checkouts(
            gathered.results,
            other_repeats,
            other_name=checkout.requested,
            settings=preparation.compare_settings,
            fail_on_bits_change=options.fail_on_bits_change,
            counts=gathered.counts,
        )
    exit_status = grade_exit_status(gathered, verdict, None, against)
    against_facts = None
    if checkout is not None:
        against_facts = AgainstFacts(
            checkout=checkout.facts(),
            comparison=None if against is None else against.record(),
            sides=sides,
        )

    def compose(comparison: Comparison | None, exit_status: int) -> GradeResult:
        return compose_grade_result(
            preparation,
            gathered,
            host,
            verdict,
            comparison,
            exit_status,
            against_facts,
            other_repeats,
        )

    result = compose(None, exit_status)
    # The result first, before it is compared with anything or printed: whatever goes
    # wrong from here on (a baseline, the terminal), the grade is not lost.
    saved = save_result(preparation.result_path, result, default=preparation.default_path)
    comparison = None
    if complete and preparation.baseline is not None and verdict is not None:
        try:
            comparison = compare_results(
                preparation.baseline,
                result,
                settings=preparation.compare_settings,
                old_source=str(options.baseline),
                new_source="this grade",
            )
        except ToposError as error:  # the baseline was checked when loaded; still, say so
            stderr.write(f"topos: error: cannot compare with --baseline: {error}\n")
        else:
            exit_status = grade_exit_status(gathered, verdict, comparison, against)
            result = compose(comparison, exit_status)
            if saved.path is not None and saved.error is None:
                saved = save_result(
                    preparation.result_path, result, default=False, replace_own=saved.path
                )
    exported = ExportedGrade(options.workload, result.verdict)
    for option, path in options.exports.items():
        if path is None:
            continue
        try:
            write_export(EXPORTERS[option], path, exported)
        except ToposError as error:
            stderr.write(f"topos: error: {option}: {error}\n")
            exit_status = most_severe((exit_status, ExitStatus.USAGE))
    drawing = None
    if gathered.results and gathered.usage_error is None and gathered.interrupted_by is None:
        # The drawing child draws while the verdict is printed (both cores are idle now).
        drawing = _start_report(saved, report_child)
    table = stderr if preparation.result_path == "-" else stdout
    if gathered.usage_error is None and verdict is not None:
        print_verdict(result.verdict, file=table, markdown=options.markdown)
        notes = [describe_data(result.workload.data)]
        notes += describe_predictions(result.memory_prediction)
        notes += describe_remat(result.routes)
        if gathered.repeat_stop is not None:
            notes.append(gathered.repeat_stop)
        if result.counts is not None:
            notes += describe_counts(result)
        table.write("\n")
        print_lines(notes, table, markdown=options.markdown)
        if comparison is not None:
            table.write("\n")
            print_comparison(comparison, file=table, markdown=options.markdown)
        if against is not None:
            table.write("\n")
            lines = against_lines(against, options.markdown)
            compared = sides_line(checkout.requested, sides)
            lines += [] if compared is None else ["", compared]
            print_lines(lines, table, markdown=options.markdown)
    table.flush()
    exit_status = _report_saved(saved, result, exit_status, stderr)
    if drawing is not None:
        stderr.flush()  # the results: line first, while the report is drawn
        report_path = drawing.finish(stderr)
        if report_path is not None:
            stderr.write(f"report: {report_path}\n")
    end_grade(gathered, stderr)
    return exit_status


def _set_apart(
    gathered: GatheredRepeats, checkout: OtherCheckout | None
) -> tuple[GatheredRepeats, list[Repeat]]:
    """This checkout's runs as the grade's record, and the other checkout's runs apart; a
    usage error a worker of the other checkout reported is said to be its."""
    if checkout is None:
        return gathered, []
    own = [run for run in gathered.results if not is_against(run)]
    other = [run for run in gathered.results if is_against(run)]
    usage_error = gathered.usage_error
    if usage_error is not None and gathered.results and is_against(gathered.results[-1]):
        usage_error = f"--against {checkout.requested}: {usage_error}"
    return dataclasses.replace(gathered, results=own, usage_error=usage_error), other


def _start_report(saved: Saved, child: ReportChild | None) -> ReportDrawing | None:
    """Starts drawing the HTML report beside the written result, in a child process
    (`child`, if it is alive); None when no report is wanted or there is no file."""
    if saved.path is None or saved.path == "-" or not reports_wanted():
        return None
    return ReportDrawing(saved.path, child)


def _report_saved(saved: Saved, result: GradeResult, exit_status: int, stderr: TextIO) -> int:
    """Says where the result went (and why not where asked); returns the exit status."""
    if saved.path is not None and saved.path != "-":
        stderr.write(f"results: {saved.path}\n")
    if saved.kept is not None:
        stderr.write(
            f"topos: {saved.kept} holds a complete result, kept; this "
            f"{incomplete_kind(result)} grade's result is beside it, {saved.path}\n"
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


#: How a prepared grade is run and finished: the routes (`grade_routes`) or a frontier's
#: points (`topos_cli.commands.frontier.grade_points`); returns the exit status.
Grading = Callable[[PreparedGrade, HostFacts, "WorkerObserver | None", TextIO, TextIO], int]


def grade_with(
    options: GradeOptions,
    grading: Grading,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    display: WorkerObserver | None = None,
    preflight: PreflightOutcome | None = None,
) -> int:
    """Validates `options`, checks the gradients first if asked, then runs `grading` with
    interrupts raised; returns its exit status. `preflight` is what the workload's
    preflight already told, if it ran (`topos frontier` asks first what a workload is).

    Raises `ToposUsageError` for bad options (before any worker starts) and
    for a data or workload error a worker reported (after the result is
    written).
    """
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    preparation = prepare(options)
    # A mistake in a user's workload code refuses the grade before any worker starts;
    # its own name, not the `--workload` spec, names the result file. With --against it
    # also says which code this side imports, to be mapped into the other checkout.
    if preflight is None:
        preflight = preflight_workload(
            options.workload, preparation.data, code_wanted=options.against is not None
        )
    named = preflight.name
    fitted = fit_to_workload(
        options, preflight.framework, preflight.routes, preflight.default_routes
    )
    if fitted != options or (named is not None and named != options.workload):
        preparation = prepare(fitted, preparation.started, named)
    if preflight.framework is not None:
        # A PyTorch step allocates as PyTorch users run it: glibc's own mmap threshold.
        preparation = dataclasses.replace(
            preparation, environment=peer_environment(preparation.environment)
        )
    preparation = dataclasses.replace(
        preparation, workload_code=preflight.code, project=find_project().facts()
    )
    if options.check:
        from topos_cli.commands.check import check_before_grade

        table = stderr if preparation.result_path == "-" else stdout
        status = check_before_grade(options.workload, preparation.data, stdout=table, stderr=stderr)
        if status != ExitStatus.OK:
            return status
    # Orphans of the workers come back to this process, to be ended (see process_tree).
    adopt_orphans()
    host = host_facts()
    with interruptions_raised():
        # run_routes returns with signals ignored, so judging and writing cannot be cut short.
        return grading(preparation, host, display, stdout, stderr)


def grade_routes(
    preparation: PreparedGrade,
    host: HostFacts,
    display: WorkerObserver | None,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """A grade's own part: runs every route (beside `--against`'s checkout, if asked),
    then judges, writes, prints and draws them."""
    against = preparation.options.against
    if against is None:
        return _grade_routes(preparation, host, display, stdout, stderr, None)
    warmup_asked = preparation.options.warmup != DEFAULT_WARMUP_STEPS
    project = find_project()
    # A ref's temporary worktree is removed however the grade ends.
    with other_checkout(
        against, warmup_asked=warmup_asked, project=project, code=preparation.workload_code
    ) as checkout:
        paths = side_paths(
            checkout,
            preparation.environment,
            Path.cwd(),
            preparation.workload_code,
            preparation.options.workload,
        )
        planned = plan_against(preparation, checkout, paths)
        return _grade_routes(planned, host, display, stdout, stderr, checkout)


def _grade_routes(
    preparation: PreparedGrade,
    host: HostFacts,
    display: WorkerObserver | None,
    stdout: TextIO,
    stderr: TextIO,
    checkout: OtherCheckout | None,
) -> int:
    """`grade_routes` once the other checkout, if any, is at hand: runs every planned
    route, then judges, writes, prints and draws them."""
    # Remat lowered once before any worker, each remat worker rebuilding the plan it
    # chose (see lowered_schedules); the schedules' files live as long as the grade.
    with tempfile.TemporaryDirectory(prefix="topos-remat-schedules-") as directory:
        preparation = with_lowered_schedules(preparation, directory)
        # The report's drawing child loads while the workers do (see ReportChild).
        child = None
        if reports_wanted() and preparation.result_path != "-":
            child = ReportChild.start()
        else:
            ReportChild.end_early()
        more = None
        if preparation.options.repeat_budget is not None:
            from topos_cli.commands.repeats_until_decisive import RepeatsUntilDecisive

            more = RepeatsUntilDecisive(
                preparation, None if checkout is None else checkout.requested
            )
        try:
            gathered = run_routes(
                preparation, display, before_turn=child.pause if child else None, more=more
            )
            if more is not None and more.stop is not None:
                gathered.repeat_stop = more.stop.words
            if child is not None:
                child.resume()  # it finishes loading while the verdict is reached
            return finish_grade(
                preparation,
                gathered,
                host,
                stdout=stdout,
                stderr=stderr,
                report_child=child,
                checkout=checkout,
            )
        finally:
            if child is not None:
                child.close()


def run_grade(
    options: GradeOptions,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    display: WorkerObserver | None = None,
) -> int:
    """Validates, runs, judges, records and prints a grade; returns its exit status (a
    frontier, a grade with remat budgets, is `topos_cli.commands.frontier.run_frontier`)."""
    return grade_with(options, grade_routes, stdout=stdout, stderr=stderr, display=display)

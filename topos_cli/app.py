"""The `topos` command line: its commands and their options.

NumPy and the library load lazily, inside the commands that need them, so
`topos --help` answers at once and `topos grade` (whose parent process must stay
light) never loads them at all.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from topos_cli import count_own_frames_as_machinery
from topos_cli.commands.check_command import check_command
from topos_cli.commands.data_commands import data_application
from topos_cli.commands.grade_commands import (
    EXIT_STATUS_HELP,
    frontier_command,
    grade_command,
)
from topos_cli.commands.options import (
    BudgetOption,
    DataOption,
    RouteOption,
    ToleranceOption,
    WorkloadOption,
    chosen_budget,
)
from topos_cli.shared.bounds import MOST_STEPS, check_count
from topos_cli.shared.errors import ExitStatus, ToposError
from topos_cli.shared.interruption import start_raising
from topos_cli.shared.output_path import check_outputs
from topos_cli.shared.output_stream import guard_standard_streams

try:  # typer 0.29 vendors click; older releases use click itself
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_exceptions


class CommandInterruptedError(Exception):
    """A command was interrupted by Ctrl-C or SIGTERM: `topos: interrupted`, exit 130.

    Not a `KeyboardInterrupt`, which the command-line framework would turn
    into a silent exit 130 before `main` could say anything.
    """


def without_flag_placeholders(command: Any, context: Any) -> None:
    """Gives every flag of `command` (and of its subcommands) an empty placeholder, so its
    help shows `--markdown`, not `--markdown <bool>`: a flag takes no value."""
    for parameter in command.get_params(context):
        if getattr(parameter, "is_flag", False) and parameter.metavar is None:
            parameter.metavar = ""
    if hasattr(command, "list_commands"):  # a group: its subcommands too
        for name in command.list_commands(context):
            subcommand = command.get_command(context, name)
            if subcommand is not None:
                without_flag_placeholders(subcommand, context)


class InterruptibleGroup(TyperGroup):
    """typer's command group; an interrupt inside a command becomes `CommandInterruptedError`;
    no flag shows a `<bool>` placeholder in help."""

    def get_params(self, ctx):  # click's own signature
        """The group's parameters, its flags without a placeholder."""
        parameters = super().get_params(ctx)
        for parameter in parameters:
            if getattr(parameter, "is_flag", False) and parameter.metavar is None:
                parameter.metavar = ""
        return parameters

    def get_command(self, ctx, cmd_name):  # click's own signature
        """The subcommand `cmd_name`, its flags without a placeholder."""
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            without_flag_placeholders(command, ctx)
        return command

    def invoke(self, ctx):  # click's own signature, of whichever click typer uses
        """Runs the command, turning an interrupt into `CommandInterruptedError`."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as error:
            raise CommandInterruptedError(getattr(error, "signal_name", "SIGINT")) from None


application = typer.Typer(
    cls=InterruptibleGroup,
    help="Grade the gradient routes of a workload: which is faster, which is leaner, "
    "and do they still train bit-identically.\n\n" + EXIT_STATUS_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
application.add_typer(data_application, name="data")
application.command("check")(check_command)


def fail(message: str, status: int = ExitStatus.USAGE) -> None:
    """Ends the command with a one-line error on stderr and a non-zero exit."""
    typer.echo(f"topos: error: {message}", err=True)
    raise typer.Exit(status)


def version_callback(value: bool) -> None:
    """Prints the version and exits."""
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"topos {version('topos')}")
        except PackageNotFoundError:
            typer.echo("topos (not installed)")
        raise typer.Exit()


@application.callback()
def root(
    context: typer.Context,
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=version_callback, is_eager=True, help="Show the version."
        ),
    ] = False,
) -> None:
    """topos: which way of computing gradients is faster, leaner, and still exactly right."""
    # A grade delivers a deferred interrupt itself, once it can write an interrupted result;
    # every other command can be interrupted from here on.
    if context.invoked_subcommand != "grade":
        start_raising()


def _program(workload_name: str, route: str, budget: str | None = None):
    from topos.errors import BudgetError, GraphError, ShapeError
    from topos.training import RouteProgram
    from topos.workloads import WorkloadNotFoundError, resolve

    count_own_frames_as_machinery()

    try:
        workload = resolve(workload_name)
        return RouteProgram(workload, route, budget if route == "remat" else None)
    except (WorkloadNotFoundError, BudgetError) as error:
        fail(str(error))
    except (ShapeError, GraphError) as error:
        fail(f"workload {workload_name!r} failed to record: {error}")
    except ValueError as error:
        # Raised from the user's own lines (a bad init shape in `record`): name them.
        fail(_user_code_error(error) or str(error))


@application.command()
def describe(
    route: RouteOption = "recorded",
    workload: WorkloadOption = "cifar10",
    summary: Annotated[
        bool,
        typer.Option(
            "--summary", help="Print only the summary lines (plan:, live volume:, budget:)."
        ),
    ] = False,
    budget: BudgetOption = None,
) -> None:
    """Print a route's plan: one line per node (per evaluation for remat), then the summary.

    Then what a training step adds to memory, part by part.

    Example: topos describe --route remat --budget 50%
    """
    program = _program(workload, route, chosen_budget(budget))
    if route in ("recorded", "remat"):
        typer.echo(
            f"recorded the chain rule: {program.forward_nodes} forward nodes + "
            f"{program.gradient_nodes} gradient nodes"
        )
    if program.shards > 1:
        typer.echo(_sharded_line(program))
    text = "\n".join(program.summary()) if summary else program.describe()
    typer.echo(text)
    if not summary:
        from topos.training import step_memory

        typer.echo(step_memory(program, program.workload.optimizer()).describe())


@application.command()
def train(
    route: RouteOption = "engine",
    workload: WorkloadOption = "cifar10",
    steps: Annotated[int, typer.Option("--steps", "-n", min=1, help="Training steps.")] = 300,
    data: DataOption = "synthetic",
    budget: BudgetOption = None,
) -> None:
    """Train one route in this process, printing exactly the seed program's lines.

    Two routes can still be compared by hand with diff.

    Example: topos train --route recorded --steps 50
    """
    import time

    from topos.datasets.errors import DataError
    from topos.training import Training
    from topos_cli.harness.data_option import data_directory

    check_count("--steps", steps, most=MOST_STEPS)
    directory = data_directory(data)
    budget = chosen_budget(budget) if route == "remat" else None
    program = _program(workload, route, budget)
    try:
        dataset = program.workload.dataset(directory)
        training = Training(program.workload, route, dataset, steps, budget)
    except DataError as error:
        fail(str(error))
    unit = getattr(dataset.train, "unit", "images")
    typer.echo(f"route {route}: {steps} steps over {len(dataset.train)} {unit}")
    # Standard output carries exactly the seed's lines; which data was used goes beside it.
    typer.echo(f"data: {dataset.name} from {dataset.source} ({dataset.format})", err=True)
    if route in ("recorded", "remat"):
        typer.echo(
            f"recorded the chain rule: {training.program.forward_nodes} forward nodes + "
            f"{training.program.gradient_nodes} gradient nodes"
        )
    if training.program.shards > 1:
        typer.echo(_sharded_line(training.program))
    for line in training.summary():
        typer.echo(line)
    typer.echo(training.step_memory().describe())
    first = last = None
    started = time.perf_counter()
    for step in range(steps):
        last = training.step(step)
        if step == 0:
            first = last
    elapsed = time.perf_counter() - started
    typer.echo(
        f"loss step 0: {first:.6f} ({int(first.view('uint32')):08x}), "
        f"step {steps - 1}: {last:.6f} ({int(last.view('uint32')):08x})"
    )
    typer.echo(
        f"route {route}: {steps} steps in {elapsed:.3f}s ({elapsed * 1000.0 / steps:.1f} ms/step)"
    )


# grade and frontier, whose command lines are kept together in grade_commands.py, come
# here in the list of commands: after run, before compare.
application.command("grade")(grade_command)
application.command("frontier")(frontier_command)


@application.command()
def compare(
    old: Annotated[str, typer.Argument(help="The earlier result JSON.", show_default=False)],
    new: Annotated[str, typer.Argument(help="The later result JSON.", show_default=False)],
    tolerance: ToleranceOption = None,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the comparison as a Markdown table.")
    ] = False,
) -> None:
    """Compare two grade results of one workload and flag regressions.

    Route by route: ms/step, peak RSS and training delta. Time is judged on the
    repeats (worker processes), leaving out steps their CPU time cannot explain.

    Exit status: 0 nothing judged a regression (the summary says "no regression
    beyond" the tolerance only where every interval lies within it, else what the
    interval allows); 1 a route of NEW did not finish; 2 not a result, or results
    of other workload, steps, data or shards; 4 a regression
    beyond the tolerance; 5 inconclusive (fewer than 3 usable repeats a side, or
    too many disturbed steps); 130 interrupted. Several: 130, 2, 1, 4, 5, 0.

    Example: topos compare results/before.json results/after.json --tolerance time=5%
    """
    from topos_cli.report.compare import compare_results
    from topos_cli.report.display.report import print_comparison
    from topos_cli.result.result_file import load_result
    from topos_cli.result.tolerance import parse_tolerance

    if old == new == "-":
        fail("OLD and NEW are both '-': standard input can be read only once; name a file for one")
    settings = parse_tolerance(tolerance)
    comparison = compare_results(
        load_result(old), load_result(new), settings=settings, old_source=old, new_source=new
    )
    print_comparison(comparison, markdown=markdown)
    raise typer.Exit(comparison.exit_status)


@application.command()
def report(
    result: Annotated[
        str, typer.Argument(help="A result JSON of topos grade.", show_default=False)
    ],
    html: Annotated[
        str | None,
        typer.Option(
            "--html",
            help="Write the HTML report here ('-' for standard output; default: beside the "
            "result).",
        ),
    ] = None,
    png: Annotated[
        str | None, typer.Option("--png", help="Also write one PNG of the main panels here.")
    ] = None,
) -> None:
    """Draw the report of a grade: a self-contained HTML page, and a PNG if asked.

    Memory over time, step times and losses per route, with the verdict table,
    host, data and settings. Older or damaged results are drawn as far as they
    go and the report says what is missing; a file that is no topos result is
    exit 2. Without --html or --png the page goes beside the result.

    Example: topos report results/grade-cifar10-20260814T101500Z.json --png grade.png
    """
    from topos_cli.report.display.report_html import write_report

    written, missing = write_report(result, html_path=html, png_path=png)
    for line in missing:
        typer.echo(f"missing: {line}", err=True)
    for path in written:
        if str(path) != "-":
            typer.echo(f"report: {path}", err=True)


@application.command()
def history(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Result files, folders or archives of them (default: results/).",
            show_default=False,
        ),
    ] = None,
    workload: Annotated[
        str | None, typer.Option("--workload", "-w", help="Only the grades of this workload.")
    ] = None,
    html: Annotated[
        str | None,
        typer.Option(
            "--html",
            help="Write the HTML page here (default: history.html in the first folder read; "
            "with --site, none unless asked).",
        ),
    ] = None,
    tolerance: ToleranceOption = None,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the tables as Markdown.")
    ] = False,
    site: Annotated[
        str | None,
        typer.Option(
            "--site",
            help="Write a static site into this folder: an index of machines and "
            "workloads, a trend page per machine and workload, each grade's report.",
        ),
    ] = None,
) -> None:
    """Follow a workload's figures across grades: ms/step, peak RSS and training Δ per route.

    Reads the results (files, folders, and .zip or .tar.gz archives of them, such as
    the artifacts of CI runners), orders them by time, groups those of one machine and
    settings (never mixing others), marks where compare would call a change
    significant, prints the latest verdict per machine and a table per group, and
    writes an HTML page with a plot per figure (with --site, a whole static site
    instead).

    Example: topos history results/ --workload cifar10

    Example: topos history artifacts/* --markdown --site site/
    """
    from pathlib import Path

    from topos_cli.report.display.history_html import write_history_html
    from topos_cli.report.display.history_site import INDEX, write_site
    from topos_cli.report.display.history_table import print_history
    from topos_cli.report.history import read_history
    from topos_cli.report.result_archive import is_archive
    from topos_cli.result.tolerance import parse_tolerance

    chosen = paths or ["results"]
    first = Path(chosen[0])
    target = None
    if html or not site:
        target = (
            Path(html) if html else (first if first.is_dir() else first.parent) / "history.html"
        )
    if site is not None and site.strip() in ("", "-"):
        fail("--site names a folder to write the site into; it cannot be standard output")
    if site is not None and Path(site).exists() and not Path(site).is_dir():
        fail(f"--site {site}: it is not a directory; name a folder to write the site into")
    # Checked before anything is read: no page may replace a result it reads, nor be
    # written into a folder it reads where it would be read as one next time (a .json or
    # an archive). Standard output carries the tables, so no page goes there.
    check_outputs(
        {
            "--html" if html else "the history page": None if target is None else str(target),
            "--site": None if site is None else str(Path(site) / INDEX),
        },
        {f"the input {path}": path for path in chosen},
        read_in_folder=lambda path: path.suffix == ".json" or is_archive(path),
    )
    found = read_history(chosen, workload=workload, settings=parse_tolerance(tolerance))
    print_history(found, markdown=markdown)
    if target is not None:
        write_history_html(found, target)
        typer.echo(f"history: {target}", err=True)
    if site is not None:
        pages = write_site(found, site)
        typer.echo(f"site: {Path(site) / INDEX} ({len(pages) - 1} pages)", err=True)


def _sharded_line(program) -> str:
    """What `describe` and `train` say of a sharded program before its plan's lines."""
    if program.shard_processes:
        where = ": the first in this process, the others each in a forked process of its own"
    elif program.workload.shard_processes is None:
        where = " on a thread of its own (shard processes need Linux)"
    else:
        where = " on a thread of its own"
    return f"sharded: {program.shards} shards of {program.rows} rows, each running this plan{where}"


def _usage_message(error: Exception) -> str:
    """A command-line parsing error in one line, pointing at the command's help."""
    message = " ".join(error.format_message().split())
    context = getattr(error, "ctx", None)
    path = getattr(context, "command_path", None)
    if path:
        name = " ".join(["topos", *path.split()[1:]])
        message += f" (see '{name} --help')"
    return message


def main() -> None:
    """Runs the command line: one-line errors, distinct exit statuses.

    The console script (`topos_cli.console_script`) calls it once the
    interrupt and the standard streams are guarded from the first instant.
    """
    saved = sys.stdout, sys.stderr
    guard_standard_streams()
    try:
        _main()
    finally:
        sys.stdout, sys.stderr = saved


def _user_code_error(error: BaseException) -> str | None:
    """The one line naming the user's file and line when `error` came from a workload's
    code; `None` for a bug of ours. The library is imported only when a frame that is
    neither ours nor Python's could be the user's (the grading parent stays light)."""
    if "topos.workloads" not in sys.modules:
        return None  # no workload was ever loaded: no user code ran
    from topos.workloads.user_code_error import user_code_error

    return user_code_error(error)


def _main() -> None:
    try:
        # Not standalone: click's own error display is a multi-line box; ours is one line.
        status = application(standalone_mode=False)
    except click_exceptions.NoArgsIsHelpError as error:
        # The help has been shown; it is all the answer there is.
        message = error.format_message()
        if message.strip():
            typer.echo(message, err=True)
        sys.exit(ExitStatus.USAGE)
    except click_exceptions.UsageError as error:
        typer.echo(f"topos: error: {_usage_message(error)}", err=True)
        sys.exit(ExitStatus.USAGE)
    except click_exceptions.ClickException as error:
        typer.echo(f"topos: error: {' '.join(error.format_message().split())}", err=True)
        sys.exit(error.exit_code)
    except (typer.Abort, CommandInterruptedError, KeyboardInterrupt):
        typer.echo("topos: interrupted", err=True)
        sys.exit(ExitStatus.INTERRUPTED)
    except ToposError as error:
        typer.echo(f"topos: error: {error}", err=True)
        sys.exit(error.exit_status)
    except Exception as error:  # a bug of ours: still one line, the traceback on request
        if os.environ.get("TOPOS_DEBUG"):
            raise
        mistake = _user_code_error(error)
        if mistake is not None:  # raised in, or called from, the user's workload: exit 2
            typer.echo(f"topos: error: {mistake}", err=True)
            sys.exit(ExitStatus.USAGE)
        typer.echo(
            f"topos: internal error: {type(error).__name__}: {error} "
            f"(set TOPOS_DEBUG=1 to see the traceback)",
            err=True,
        )
        sys.exit(ExitStatus.ROUTE_FAILED)
    sys.exit(status or 0)


if __name__ == "__main__":
    main()

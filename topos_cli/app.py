"""The `topos` command line assembled: the group, its root options, and every command,
each written in a file of its own under `commands/` and registered here, in the order
`topos --help` lists them.

NumPy and the library load lazily, inside the commands that need them, so
`topos --help` answers at once and `topos grade` (whose parent process must stay
light) never loads them at all.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from topos_cli.command_group import InterruptibleGroup
from topos_cli.command_line import run_command_line
from topos_cli.commands.check_command import check_command
from topos_cli.commands.compare_command import compare_command
from topos_cli.commands.data_commands import data_application
from topos_cli.commands.describe_command import describe_command
from topos_cli.commands.grade_commands import EXIT_STATUS_HELP, frontier_command, grade_command
from topos_cli.commands.history_command import history_command
from topos_cli.commands.report_command import report_command
from topos_cli.commands.train_command import train_command
from topos_cli.shared.interruption import start_raising
from topos_cli.shared.output_stream import guard_standard_streams

# Every command, one way: its name and the function whose signature is its command line.
COMMANDS: tuple[tuple[str, Callable[..., Any]], ...] = (
    ("check", check_command),
    ("describe", describe_command),
    ("train", train_command),
    ("grade", grade_command),
    ("frontier", frontier_command),
    ("compare", compare_command),
    ("report", report_command),
    ("history", history_command),
)

application = typer.Typer(
    cls=InterruptibleGroup,
    help="Grade the gradient routes of a workload: which is faster, which is leaner, "
    "and do they still train bit-identically.\n\n" + EXIT_STATUS_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
for name, command in COMMANDS:
    application.command(name)(command)
# `topos data` is a group of its own (fetch, info), listed after the commands.
application.add_typer(data_application, name="data")


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


def main() -> None:
    """Runs the command line: one-line errors, distinct exit statuses.

    The console script (`topos_cli.console_script`) calls it once the
    interrupt and the standard streams are guarded from the first instant.
    """
    saved = sys.stdout, sys.stderr
    guard_standard_streams()
    try:
        run_command_line(application)
    finally:
        sys.stdout, sys.stderr = saved


if __name__ == "__main__":
    main()

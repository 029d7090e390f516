"""How `topos` ends: every outcome of a command as one line on stderr and an exit status."""

from __future__ import annotations

import os
import sys
from typing import Any

import typer

from topos_cli.command_group import CommandInterruptedError
from topos_cli.commands.user_code import user_code_error_line
from topos_cli.shared.errors import ExitStatus, ToposError

try:  # typer 0.29 vendors click; older releases use click itself
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_exceptions


def _usage_message(error: Exception) -> str:
    """A command-line parsing error in one line, pointing at the command's help."""
    message = " ".join(error.format_message().split())
    context = getattr(error, "ctx", None)
    path = getattr(context, "command_path", None)
    if path:
        name = " ".join(["topos", *path.split()[1:]])
        message += f" (see '{name} --help')"
    return message


def run_command_line(application: Any) -> None:
    """Runs `application` once: a user's mistake is one line and a distinct exit status; a
    bug of ours one line too, its traceback on request (TOPOS_DEBUG=1)."""
    try:
        # Not standalone: click's own error display is a multi-line box; ours is one line.
        # Named `topos` however it was started (`python -m topos_cli.console_script` gave
        # "python -m topos_cli.console_script grade" as the command in usage and hints).
        status = application(standalone_mode=False, prog_name="topos")
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
        mistake = user_code_error_line(error)
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

"""How a command ends on a user's mistake: one line on stderr and a non-zero exit."""

from __future__ import annotations

import typer

from topos_cli.shared.errors import ExitStatus


def fail(message: str, status: int = ExitStatus.USAGE) -> None:
    """Ends the command with a one-line error on stderr and a non-zero exit."""
    typer.echo(f"topos: error: {message}", err=True)
    raise typer.Exit(status)

"""The `topos` command line: its commands and their options."""

from __future__ import annotations

import typer

application = typer.Typer(help="Grade the gradient routes of a workload.", no_args_is_help=True)


@application.callback()
def root() -> None:
    """topos: which way of computing gradients is faster, leaner, and still exactly right."""


def main() -> None:
    """Entry point of the console script."""
    application()

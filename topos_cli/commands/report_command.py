"""`topos report`: a grade's result drawn as a self-contained HTML page (and a PNG)."""

from __future__ import annotations

from typing import Annotated

import typer


def report_command(
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
    from topos_cli.render.report_html import write_report

    written, missing = write_report(result, html_path=html, png_path=png)
    for line in missing:
        typer.echo(f"missing: {line}", err=True)
    for path in written:
        if str(path) != "-":
            typer.echo(f"report: {path}", err=True)

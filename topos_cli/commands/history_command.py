"""`topos history`: a workload's figures followed across grades, as tables, a page or a site."""

from __future__ import annotations

from typing import Annotated

import typer

from topos_cli.commands.command_failure import fail
from topos_cli.commands.options import ToleranceOption
from topos_cli.shared.output_path import check_outputs


def history_command(
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

    from topos_cli.judge.history import read_history
    from topos_cli.render.history_html import write_history_html
    from topos_cli.render.history_site import INDEX, write_site
    from topos_cli.render.history_table import print_history
    from topos_cli.result.result_archive import is_archive
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

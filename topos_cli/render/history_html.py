"""The history of a workload as a self-contained HTML page: per group of comparable grades,
its host and settings, a plot per figure (ms/step, peak RSS, training Δ) and the table."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from topos_cli.judge.history import History, HistoryGroup
from topos_cli.render.history_table import (
    grade_count,
    history_headers,
    history_notes,
    history_rows,
)
from topos_cli.render.html_page import bullet_list, escape, figure, missing_box, page, table
from topos_cli.render.plotting import figure_svg
from topos_cli.render.trend_figure import trend_figure
from topos_cli.result.result_file import default_report_path
from topos_cli.shared.errors import ToposUsageError
from topos_cli.shared.output_path import write_output


def _cell_classes(rows: list[list[str]]) -> list[list[str]]:
    """Per cell, `regression` or `improvement` where the cell carries a significant mark."""
    return [
        ["regression" if "▲" in cell else "improvement" if "▼" in cell else "" for cell in row]
        for row in rows
    ]


def report_links(
    group: HistoryGroup, page_path: str | os.PathLike[str] | None = None
) -> list[str | None]:
    """Per grade of the group, the address of its report (the HTML beside its result),
    relative to the page at `page_path`; `None` for a grade whose report is not there."""
    links: list[str | None] = []
    base = Path(page_path).resolve().parent if page_path is not None else Path.cwd()
    for point in group.points:
        report = default_report_path(point.source)
        if not report.exists():
            links.append(None)
            continue
        links.append(Path(os.path.relpath(report.resolve(), base)).as_posix())
    return links


def render_history_html(
    history: History,
    page_path: str | os.PathLike[str] | None = None,
    *,
    links: Callable[[HistoryGroup], list[str | None]] | None = None,
    title: str | None = None,
    preface: Sequence[str] = (),
) -> str:
    """The whole history page; each grade links to its report, relative to `page_path`
    (where the page will be written; the working directory when not given), or where
    `links` says (per group, per grade: the site links the reports it drew). `preface`
    is HTML put under the heading (the site's way back to its index)."""
    workloads = sorted({group.workload for group in history.groups})
    title = title or f"topos history: {', '.join(workloads)}"
    grades = sum(len(group.points) for group in history.groups)
    body = [
        f"<h1>{escape(title)}</h1>",
        *preface,
        f"<p>{grades} grades in {len(history.groups)} "
        f"group{'s' if len(history.groups) != 1 else ''} of comparable host and settings.</p>",
        missing_box(list(history.skipped), "Files passed over"),
        bullet_list(history_notes(history)[: 2 if history.grouping_note else 1], "notes"),
    ]
    for number, group in enumerate(history.groups):
        body += [
            f"<h2>{escape(group.title)} ({grade_count(len(group.points))})</h2>",
            bullet_list([group.host], "facts"),
        ]
        group_links = report_links(group, page_path) if links is None else links(group)
        if len(group.points) > 1:
            svg = figure_svg(
                trend_figure(group, group.figures, links=group_links), f"trend-{number}"
            )
            body.append(
                figure(
                    svg,
                    f"{', '.join(group.figures)} per route across the group's grades, "
                    "oldest first, "
                    "each with its spread over the grade's repeats (bars); a point links to "
                    "its grade's report. A red triangle up marks a significant regression "
                    "against the grade before, a green one down a significant improvement.",
                    f"trend-{number}",
                )
            )
        # A group of one grade has no trend: its row says all there is.
        rows = history_rows(group)
        row_links = [
            [link, *([None] * (len(history_headers(group)) - 1))]
            for point, link in zip(group.points, group_links, strict=True)
            for route in group.routes
            if any(key[0] == route for key in point.values)
        ]
        body.append(
            table(
                history_headers(group),
                rows,
                numeric_columns=(3, 4, 5, 6),
                cell_classes=_cell_classes(rows),
                links=row_links,
            )
        )
    body.append(
        "<footer>This page is self-contained: nothing is fetched when it is viewed.</footer>"
    )
    return page(title, "\n".join(part for part in body if part))


def write_history_html(history: History, path: str | os.PathLike[str]) -> None:
    """Writes the history page to `path` (`-`: standard output); raises `ToposUsageError`
    if it cannot. The path is checked first by the command (`check_outputs`)."""
    text = render_history_html(history, path)
    try:
        write_output(path, text.encode("utf-8"))
    except OSError as error:
        raise ToposUsageError(f"cannot write {path}: {error.strerror or error}") from None

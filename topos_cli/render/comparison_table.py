"""A comparison of two results for people (`topos compare`, `--baseline`): one row per
route and figure, drawn by `tables` three ways, as the verdict is."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from topos_cli.judge.compare import Comparison
from topos_cli.judge.figure_change import FigureChange
from topos_cli.render.exporters.markdown_table import markdown_table
from topos_cli.render.tables import (
    FittedTable,
    Forms,
    plain_table,
    status_style,
)
from topos_cli.shared.units import DASH, MEBIBYTE, format_milliseconds

COMPARISON_HEADERS = ("route", "figure", "old", "new", "change", "tolerance", "test", "status")


def _format_figure(change: FigureChange, value: float | None) -> str:
    """An old or new figure in its unit: ms with three digits, bytes as MiB."""
    if value is None:
        return DASH
    if change.unit == "bytes":
        return f"{value / MEBIBYTE:.1f} MiB"
    return f"{format_milliseconds(value)} ms"


def _test_cell(change: FigureChange) -> str:
    """What decided: for time the test and the repeats it rests on (`p = 0.003, 3 repeats
    each`, `not tested, 1 repeat each`), for memory whether ranges overlap."""
    if change.time is not None:
        judgement = change.time
        disturbed = [side.disturbed for side in (judgement.old, judgement.new)]
        test = "not tested" if judgement.p_value is None else f"p = {judgement.p_value:.2g}"
        text = f"{test}, {judgement.repeats}"
        if None in disturbed:
            text += ", disturbance unknown"
        elif any(disturbed):
            text += f", {sum(disturbed)} steps disturbed"
        return text
    if change.p_value is not None:
        return f"p = {change.p_value:.3g}"
    if change.significant is None:
        return DASH
    return "ranges apart" if change.significant else "ranges overlap"


def comparison_rows(comparison: Comparison) -> list[list[str]]:
    """The comparison table as rows of strings, in `COMPARISON_HEADERS` order."""
    return [
        [
            change.route,
            change.figure,
            _format_figure(change, change.old),
            _format_figure(change, change.new),
            DASH if change.change is None else f"{change.change:+.1%}",
            f"{change.tolerance:.0%}",
            _test_cell(change),
            change.status,
        ]
        for change in comparison.changes
    ]


def render_comparison_plain(comparison: Comparison, ascii_only: bool = False) -> str:
    """The comparison as plain text: table, summary, notes."""
    table = plain_table(COMPARISON_HEADERS, comparison_rows(comparison), ascii_only)
    parts = [table, "", comparison.summary]
    parts.extend(f"note: {note}" for note in (*comparison.notes, *comparison.count_notes))
    parts.extend(_time_notes(comparison))
    return "\n".join(parts) + "\n"


def _time_notes(comparison: Comparison) -> list[str]:
    """Why each time judgement that is not a claim came out as it did."""
    return [
        f"{change.route} time {change.status}: {change.time.reason}"
        for change in comparison.changes
        if change.time is not None and change.status not in ("regression", "improvement")
    ]


def render_comparison_markdown(comparison: Comparison) -> str:
    """The comparison as Markdown: table, summary in bold, notes as a list."""
    parts = [
        markdown_table(COMPARISON_HEADERS, comparison_rows(comparison)),
        "",
        f"**{comparison.summary}**",
    ]
    notes = (*comparison.notes, *comparison.count_notes)
    if notes:
        parts.append("")
        parts.extend(f"- note: {note}" for note in notes)
    return "\n".join(parts) + "\n"


def comparison_table(comparison: Comparison) -> FittedTable:
    """The comparison for a terminal, statuses coloured; stacked by route and figure when
    the columns cannot fit, never a word broken."""
    last = len(COMPARISON_HEADERS) - 1
    return FittedTable(
        f"topos compare: {comparison.workload}",
        COMPARISON_HEADERS,
        comparison_rows(comparison),
        right_aligned=frozenset({2, 3, 4, 5}),
        style=lambda column, text: status_style(text) if column == last else "",
        name_columns=2,
    )


def comparison_renderables(comparison: Comparison) -> list[RenderableType]:
    """The comparison on a terminal: its table, the summary red on a regression, the notes."""
    style = "bold red" if comparison.regressions else "bold green"
    if not comparison.regressions and comparison.inconclusive:
        style = "bold yellow"
    notes = [
        Text(f"note: {note}", style="yellow")
        for note in (*comparison.notes, *comparison.count_notes)
    ]
    notes += [Text(line, style="yellow") for line in _time_notes(comparison)]
    return [comparison_table(comparison), Text(comparison.summary, style=style), *notes]


#: The comparison in its three forms, printed as the verdict is.
COMPARISON_FORMS = Forms(
    render_comparison_markdown, render_comparison_plain, comparison_renderables
)
print_comparison = COMPARISON_FORMS.print

"""Renders a verdict or a comparison for people: a rich table, plain text, or Markdown.

Each table is built once as rows of strings, then drawn three ways: a rich
table on a terminal; aligned plain text when standard output is not a
terminal or `NO_COLOR` is set (so logs and pipes get no escape codes and no
box drawing); and a Markdown table for pull-request comments and CI job
summaries. rich does not import NumPy, so the parent process stays light.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from topos_cli.compare import Comparison, FigureChange
from topos_cli.output_stream import ASCII_SPELLINGS, ascii_spelling, can_encode
from topos_cli.verdict import Parity, RouteParity, RouteVerdict, Verdict

_MEBIBYTE = 1024 * 1024
_DASH = "—"

#: The verdict table's columns. ms/step is the median ± the IQR over measured steps,
#: then [lowest–highest] median across repeats; Δ is the training delta.
VERDICT_HEADERS = (
    "route",
    "status",
    "ms/step ± IQR",
    "first step ms",
    "speed",
    "peak RSS MiB",
    "training Δ MiB",
    "memory",
    "parity",
)

COMPARISON_HEADERS = ("route", "figure", "old", "new", "change", "tolerance", "test", "status")


def use_plain_output(stream: TextIO | None = None) -> bool:
    """Whether to print plain text: `NO_COLOR` is set (non-empty), or `stream` is no terminal."""
    if os.environ.get("NO_COLOR"):
        return True
    stream = stream if stream is not None else sys.stdout
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):  # a closed or file-less stream is no terminal
        return True


def format_milliseconds(milliseconds: float, scale: float | None = None) -> str:
    """A time with about four significant digits: `337.2`, `12.41`, `0.812`.

    `scale` picks the decimals instead of the value itself, so a spread is
    printed to the same precision as the median it goes with.
    """
    magnitude = abs(milliseconds if scale is None else scale)
    if magnitude >= 100:
        return f"{milliseconds:.1f}"
    if magnitude >= 1:
        return f"{milliseconds:.2f}"
    return f"{milliseconds:.3f}"


def format_mebibytes(count: float | None) -> str:
    """Bytes as MiB to one decimal, or a dash when not measured."""
    return _DASH if count is None else f"{count / _MEBIBYTE:.1f}"


def _status_cell(route: RouteVerdict) -> str:
    """`ok`, `failed`, or e.g. `timed out (1 of 2 ok)` when some repeats finished."""
    if route.failures and route.completed:
        return f"{route.status} ({route.completed} of {route.repeats} ok)"
    return route.status


def _speed_cells(route: RouteVerdict, reference: str) -> tuple[str, str, str]:
    """The ms/step, first-step and speed-ratio cells of a route."""
    speed = route.speed
    if speed is None:
        return _DASH, _DASH, _DASH
    summary = speed.milliseconds_per_step
    scale = summary.median
    spread = format_milliseconds(summary.interquartile_range, scale)
    median_cell = f"{format_milliseconds(summary.median)} ± {spread}"
    medians = speed.repeat_medians_milliseconds
    if len(medians) >= 2:
        # The range of the per-repeat medians: how far apart the runs landed.
        low = format_milliseconds(min(medians), scale)
        high = format_milliseconds(max(medians), scale)
        median_cell += f" [{low}–{high}]"
    first = (
        _DASH
        if speed.first_step_milliseconds is None
        else format_milliseconds(speed.first_step_milliseconds)
    )
    if route.route == reference:
        ratio = "reference"
    elif speed.ratio is None:
        ratio = _DASH
    else:
        ratio = speed.ratio.phrase
    return median_cell, first, ratio


def _memory_cells(route: RouteVerdict, reference: str) -> tuple[str, str, str]:
    """The peak RSS, training delta and memory-ratio cells of a route."""
    memory = route.memory
    if memory is None:
        return _DASH, _DASH, _DASH
    if route.route == reference:
        ratio = "reference"
    elif memory.peak_ratio is None:
        ratio = _DASH
    else:
        ratio = f"{memory.peak_ratio:.2f}x"
        if memory.training_delta_ratio is not None:
            ratio += f" (Δ {memory.training_delta_ratio:.2f}x)"
    return (
        format_mebibytes(memory.peak_rss_bytes),
        format_mebibytes(memory.training_delta_bytes),
        ratio,
    )


def _parity_cell(route: RouteParity | None, parity: Parity) -> str:
    """What parity says about one route: agreement, or the step where it parts."""
    if route is None or route.runs == 0:
        return _DASH
    if route.repeatable is False and route.repeat_divergence is not None:
        return f"not repeatable (step {route.repeat_divergence.step})"
    if route.matches_reference is False and route.divergence is not None:
        return f"parts at step {route.divergence.step}"
    if parity.status == "bit-identical":
        return "bit-identical"
    if parity.status == "not checked":
        return "not checked"
    # Broken elsewhere, or incomplete: this route agrees as far as compared.
    return f"agrees to step {parity.steps}" if parity.status == "incomplete" else "agrees"


def verdict_rows(verdict: Verdict) -> list[list[str]]:
    """The verdict table as rows of strings, one per route, in `VERDICT_HEADERS` order."""
    parities = {route.route: route for route in verdict.parity.routes}
    rows = []
    for route in verdict.routes:
        median_cell, first, speed_ratio = _speed_cells(route, verdict.reference)
        peak, delta, memory_ratio = _memory_cells(route, verdict.reference)
        rows.append(
            [
                route.route,
                _status_cell(route),
                median_cell,
                first,
                speed_ratio,
                peak,
                delta,
                memory_ratio,
                _parity_cell(parities.get(route.route), verdict.parity),
            ]
        )
    return rows


def _verdict_notes(verdict: Verdict) -> list[str]:
    """The lines after the table: legend, failures with their detail, and warnings."""
    lines = []
    tentative = any(
        route.speed is not None and route.speed.ratio is not None and route.speed.ratio.tentative
        for route in verdict.routes
    )
    if tentative:
        lines.append(
            "~ past the threshold, but not significant "
            f"(Mann-Whitney p ≥ {verdict.settings.significance_level:g})"
        )
    for route in verdict.routes:
        for failure in route.failures:
            where = f"{route.route} repeat {failure.repeat + 1}: {failure.status}"
            if failure.nonfinite_step is not None:
                where += f" at step {failure.nonfinite_step}"
            detail = [line for line in (failure.detail or "").splitlines() if line.strip()]
            lines.append(where + (f": {detail[0]}" if detail else ""))
            lines.extend(f"    {line}" for line in detail[1:])
    for warning in verdict.warnings:
        lines.append(f"warning: {warning.message}")
        lines.append(f"    remedy: {warning.remedy}")
    return lines


def plain_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], ascii_only: bool = False
) -> str:
    """Aligned columns separated by two spaces, under a header and a rule; no colour, no boxes.

    With `ascii_only` every cell is spelled in ASCII (`±` as `+/-`) before the
    columns are measured, so they stay aligned on an ASCII stream.
    """
    if ascii_only:
        headers = [ascii_spelling(header) for header in headers]
        rows = [[ascii_spelling(cell) for cell in row] for row in rows]
    widths = [
        max([len(header)] + [len(row[column]) for row in rows])
        for column, header in enumerate(headers)
    ]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([line(headers).rstrip(), rule] + [line(row).rstrip() for row in rows])


def _markdown_cell(text: str) -> str:
    """A table cell safe in Markdown: pipes escaped, newlines as spaces."""
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = [
        "| " + " | ".join(_markdown_cell(header) for header in headers) + " |",
        "| " + " | ".join("---" for _ in headers) + " |",
    ]
    lines.extend("| " + " | ".join(_markdown_cell(cell) for cell in row) + " |" for row in rows)
    return "\n".join(lines)


def render_verdict_plain(verdict: Verdict, ascii_only: bool = False) -> str:
    """The verdict as plain text: table, summary sentence, notes and warnings."""
    table = plain_table(VERDICT_HEADERS, verdict_rows(verdict), ascii_only)
    parts = [table, "", verdict.summary]
    notes = _verdict_notes(verdict)
    if notes:
        parts.extend(["", *notes])
    return "\n".join(parts) + "\n"


def render_verdict_markdown(verdict: Verdict) -> str:
    """The verdict as Markdown: table, summary in bold, notes and warnings as a list."""
    parts = [markdown_table(VERDICT_HEADERS, verdict_rows(verdict)), "", f"**{verdict.summary}**"]
    notes = _verdict_notes(verdict)
    if notes:
        parts.append("")
        # Indented lines (a failure's detail, a warning's remedy) nest under the line above.
        parts.extend(
            f"  - {note.strip()}" if note.startswith("    ") else f"- {note}" for note in notes
        )
    return "\n".join(parts) + "\n"


def _status_style(text: str) -> str:
    """The colour of a status or parity cell: green when good, red when not."""
    good = ("ok", "bit-identical", "agrees", "reference", "within tolerance", "improvement")
    if text.startswith(good):
        return "green"
    if text.startswith(("interrupted", "not checked", "not significant", "missing")):
        return "yellow"
    return "red"


def _rich_table(title: str, headers: Sequence[str], right_aligned: set[int]) -> Table:
    """A compact rich table (no outer edge) that wraps cells on a narrow terminal.

    Cells fold rather than end in an ellipsis, and no column has a minimum
    width, because rich drops whole columns it cannot fit: a wrapped figure
    is still there, a dropped one is lost.
    """
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False
    )
    for column, header in enumerate(headers):
        table.add_column(
            header, justify="right" if column in right_aligned else "left", overflow="fold"
        )
    return table


def verdict_table(verdict: Verdict) -> Table:
    """The verdict as a rich table, statuses and parity coloured."""
    rows = verdict_rows(verdict)
    table = _rich_table("topos grade", VERDICT_HEADERS, right_aligned={2, 3, 5, 6})
    for row in rows:
        cells: list[Text | str] = list(row)
        cells[1] = Text(row[1], style=_status_style(row[1]))
        cells[8] = Text(row[8], style=_status_style(row[8]) if row[8] != _DASH else "")
        if row[4].startswith("~"):
            cells[4] = Text(row[4], style="yellow")
        table.add_row(*cells)
    return table


def _print_in_form(
    stream: TextIO,
    markdown: bool,
    plain: bool | None,
    as_markdown: Callable[[], str],
    as_plain: Callable[[bool], str],
    as_rich: Callable[[Console], None],
) -> None:
    """Writes one of three forms: Markdown if asked, else plain text or rich as
    `use_plain_output` decides for `stream` (unless `plain` says)."""
    if markdown:
        stream.write(as_markdown())
    elif plain if plain is not None else use_plain_output(stream):
        # An ASCII stream gets ASCII spellings, measured before the columns are aligned.
        stream.write(as_plain(not can_encode("".join(ASCII_SPELLINGS), stream)))
    else:
        as_rich(Console(file=stream, highlight=False))


def print_verdict(
    verdict: Verdict,
    *,
    file: TextIO | None = None,
    markdown: bool = False,
    plain: bool | None = None,
) -> None:
    """Prints the verdict: Markdown if asked, else plain text or rich (`use_plain_output`)."""

    def as_rich(console: Console) -> None:
        console.print(verdict_table(verdict))
        style = "bold green" if verdict.exit_status == 0 else "bold red"
        console.print(Text(verdict.summary, style=style))
        for line in _verdict_notes(verdict):
            console.print(Text(line, style=_note_style(line)))

    _print_in_form(
        file if file is not None else sys.stdout,
        markdown,
        plain,
        lambda: render_verdict_markdown(verdict),
        lambda ascii_only: render_verdict_plain(verdict, ascii_only),
        as_rich,
    )


def _note_style(line: str) -> str:
    """Warnings, remedies and the legend in yellow; failures and their detail in red."""
    return "yellow" if line.lstrip().startswith(("warning", "remedy", "~")) else "red"


def _format_figure(change: FigureChange, value: float | None) -> str:
    """An old or new figure in its unit: ms with three digits, bytes as MiB."""
    if value is None:
        return _DASH
    if change.unit == "bytes":
        return f"{value / _MEBIBYTE:.1f} MiB"
    return f"{format_milliseconds(value)} ms"


def _test_cell(change: FigureChange) -> str:
    """What decided significance: the rank test's p, whether ranges overlap, or nothing."""
    if change.p_value is not None:
        return f"p = {change.p_value:.3g}"
    if change.significant is None:
        return _DASH
    return "ranges apart" if change.significant else "ranges overlap"


def comparison_rows(comparison: Comparison) -> list[list[str]]:
    """The comparison table as rows of strings, in `COMPARISON_HEADERS` order."""
    return [
        [
            change.route,
            change.figure,
            _format_figure(change, change.old),
            _format_figure(change, change.new),
            _DASH if change.change is None else f"{change.change:+.1%}",
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
    parts.extend(f"note: {note}" for note in comparison.notes)
    return "\n".join(parts) + "\n"


def render_comparison_markdown(comparison: Comparison) -> str:
    """The comparison as Markdown: table, summary in bold, notes as a list."""
    parts = [
        markdown_table(COMPARISON_HEADERS, comparison_rows(comparison)),
        "",
        f"**{comparison.summary}**",
    ]
    if comparison.notes:
        parts.append("")
        parts.extend(f"- note: {note}" for note in comparison.notes)
    return "\n".join(parts) + "\n"


def comparison_table(comparison: Comparison) -> Table:
    """The comparison as a rich table, statuses coloured."""
    rows = comparison_rows(comparison)
    table = _rich_table(
        f"topos compare: {comparison.workload}",
        COMPARISON_HEADERS,
        right_aligned={2, 3, 4, 5},
    )
    for row in rows:
        table.add_row(*row[:-1], Text(row[-1], style=_status_style(row[-1])))
    return table


def print_comparison(
    comparison: Comparison,
    *,
    file: TextIO | None = None,
    markdown: bool = False,
    plain: bool | None = None,
) -> None:
    """Prints the comparison, choosing Markdown, plain text or rich as `print_verdict` does."""

    def as_rich(console: Console) -> None:
        console.print(comparison_table(comparison))
        style = "bold red" if comparison.regressions else "bold green"
        console.print(Text(comparison.summary, style=style))
        for note in comparison.notes:
            console.print(Text(f"note: {note}", style="yellow"))

    _print_in_form(
        file if file is not None else sys.stdout,
        markdown,
        plain,
        lambda: render_comparison_markdown(comparison),
        lambda ascii_only: render_comparison_plain(comparison, ascii_only),
        as_rich,
    )

"""`topos grade --export-markdown FILE`: the CSV's rows as a Markdown table for a pull
request's description, the verdict's phrase in the speed column."""

from __future__ import annotations

from topos_cli.render.exporters.export_rows import export_rows
from topos_cli.render.exporters.exported_grade import ExportedGrade
from topos_cli.render.exporters.markdown_table import markdown_table

#: The Markdown table's headers, one per column.
MARKDOWN_HEADERS = (
    "route",
    "status",
    "repeats",
    "wall ms/step (median)",
    "wall ms/step (interquartile)",
    "CPU ms/step",
    "speed",
    "peak RSS (MiB)",
    "training Δ (MiB)",
    "parity",
)

#: The columns of figures, aligned right: all but the route, its status and parity.
FIGURE_COLUMNS = frozenset(range(2, len(MARKDOWN_HEADERS) - 1))

#: What a missing figure reads as.
MISSING = "–"


def _mebibytes(count: int | None) -> str:
    return MISSING if count is None else f"{count / 2**20:.1f}"


def _milliseconds(value: float | None) -> str:
    return MISSING if value is None else f"{value:.2f}"


class MarkdownExporter:
    """One row per route as a GitHub Markdown table, ending in a newline."""

    name = "markdown"
    option = "--export-markdown"
    suffix = ".md"
    standard_output = False

    def export(self, grade: ExportedGrade) -> str | None:
        """The table, or `None` without a verdict."""
        if grade.verdict is None:
            return None
        rows = []
        for row in export_rows(grade.verdict):
            low = row["wall_ms_per_step_lower_quartile"]
            high = row["wall_ms_per_step_upper_quartile"]
            interval = MISSING if low is None else f"{_milliseconds(low)}–{_milliseconds(high)}"
            rows.append(
                [
                    row["route"],
                    row["status"],
                    str(row["completed_repeats"]),
                    _milliseconds(row["wall_ms_per_step_median"]),
                    interval,
                    _milliseconds(row["cpu_ms_per_step"]),
                    row["speed_phrase"] or MISSING,
                    _mebibytes(row["peak_rss_bytes"]),
                    _mebibytes(row["training_delta_bytes"]),
                    row["parity"],
                ]
            )
        return markdown_table(MARKDOWN_HEADERS, rows, FIGURE_COLUMNS) + "\n"

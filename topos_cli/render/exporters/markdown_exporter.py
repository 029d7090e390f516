"""`topos grade --export-markdown FILE`: the CSV's rows as a Markdown table for a pull
request's description, the verdict's phrase in the speed column (a native step's step
tensors beside the training Δ, as the verdict table names them)."""

from __future__ import annotations

from topos_cli.render.exporters.export_rows import export_rows
from topos_cli.render.exporters.exported_grade import ExportedGrade
from topos_cli.render.exporters.markdown_table import markdown_table
from topos_cli.render.step_tensors import STEP_TENSOR_COLUMN, shows_step_tensors, step_tensor_cell
from topos_cli.render.verdict_record import verdict_record

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

#: A native verdict's column beside the training Δ: the verdict table's label of it.
STEP_TENSOR_HEADER = STEP_TENSOR_COLUMN[1].replace(" MiB", " (MiB)")

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
        verdict = verdict_record(grade.verdict)
        step_tensors = shows_step_tensors(verdict)
        headers = list(MARKDOWN_HEADERS)
        if step_tensors:
            headers.insert(headers.index("training Δ (MiB)") + 1, STEP_TENSOR_HEADER)
        rows = []
        for row in export_rows(verdict):
            low = row["wall_ms_per_step_lower_quartile"]
            high = row["wall_ms_per_step_upper_quartile"]
            interval = MISSING if low is None else f"{_milliseconds(low)}–{_milliseconds(high)}"
            cells = [
                row["route"],
                row["status"],
                str(row["completed_repeats"]),
                _milliseconds(row["wall_ms_per_step_median"]),
                interval,
                _milliseconds(row["cpu_ms_per_step"]),
                row["speed_phrase"] or MISSING,
                _mebibytes(row["peak_rss_bytes"]),
                _mebibytes(row["training_delta_bytes"]),
            ]
            if step_tensors:
                tensors = row["step_tensor_bytes"]
                cells.append(MISSING if tensors is None else step_tensor_cell(tensors))
            rows.append([*cells, row["parity"]])
        # The figures are aligned right: all but the route, its status and parity.
        figures = range(2, len(headers) - 1)
        return markdown_table(headers, rows, figures) + "\n"

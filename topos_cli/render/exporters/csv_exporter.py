"""`topos grade --export-csv FILE`: one row per route (`export_rows`) for a spreadsheet,
every figure a number (the verdict's words in a column of their own; a native step's
step tensors in bytes beside the training Δ)."""

from __future__ import annotations

import csv
import io

from topos_cli.render.exporters.export_rows import export_columns, export_rows
from topos_cli.render.exporters.exported_grade import ExportedGrade
from topos_cli.render.verdict_record import verdict_record


class CsvExporter:
    """The rows as CSV with a header line; a missing figure is an empty field."""

    name = "csv"
    option = "--export-csv"
    suffix = ".csv"
    standard_output = False

    def export(self, grade: ExportedGrade) -> str | None:
        """The CSV text, or `None` without a verdict."""
        if grade.verdict is None:
            return None
        verdict = verdict_record(grade.verdict)
        columns = export_columns(verdict)
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for row in export_rows(verdict):
            writer.writerow({key: "" if row[key] is None else row[key] for key in columns})
        return buffer.getvalue()

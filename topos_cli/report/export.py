"""`topos grade --export-csv FILE` and `--export-markdown FILE`: one row per route, as
hyperfine exports its runs, for a spreadsheet or a pull request's description.

Each row: the route, its status and completed repeats, the wall ms/step (median, and the
interquartile interval of its measured steps), its speed against the reference (with
its interval), peak RSS, training Δ and parity. Written atomically (a reader sees the old
file or the new one), from the verdict the JSON holds, so they never disagree with it.
"""

from __future__ import annotations

import csv
import io
import os
from typing import Any

from topos.system.atomic_file import write_bytes_atomically
from topos_cli.report.verdict import Parity, RouteParity, Verdict

#: The CSV's columns, in order (also the keys of `export_rows`).
COLUMNS = (
    "route",
    "status",
    "completed_repeats",
    "wall_ms_per_step_median",
    "wall_ms_per_step_lower_quartile",
    "wall_ms_per_step_upper_quartile",
    "speed_vs_reference",
    "peak_rss_bytes",
    "training_delta_bytes",
    "parity",
)

#: The Markdown table's headers, one per column.
MARKDOWN_HEADERS = (
    "route",
    "status",
    "repeats",
    "wall ms/step (median)",
    "wall ms/step (interquartile)",
    "speed",
    "peak RSS (MiB)",
    "training Δ (MiB)",
    "parity",
)


def parity_phrase(route: RouteParity | None, parity: Parity) -> str:
    """One route's parity in a few words: `bit-identical`, `parts at step 3`, ..."""
    if route is None or route.runs == 0:
        return "not checked"
    if route.repeatable is False and route.repeat_divergence is not None:
        return f"not repeatable (step {route.repeat_divergence.step})"
    if route.matches_reference is False and route.divergence is not None:
        return f"parts at step {route.divergence.step}"
    return parity.status if parity.status in ("bit-identical", "not checked") else "agrees"


def export_rows(verdict: Verdict) -> list[dict[str, Any]]:
    """One row per route of the verdict, keyed by `COLUMNS` (`None` for what is missing)."""
    parities = {route.route: route for route in verdict.parity.routes}
    rows = []
    for route in verdict.routes:
        speed, memory = route.speed, route.memory
        steps = None if speed is None else speed.milliseconds_per_step
        if route.route == verdict.reference:
            versus = "reference"
        else:
            versus = None if speed is None or speed.ratio is None else speed.ratio.phrase
        rows.append(
            {
                "route": route.route,
                "status": route.status,
                "completed_repeats": route.completed,
                "wall_ms_per_step_median": None if steps is None else steps.median,
                "wall_ms_per_step_lower_quartile": None if steps is None else steps.lower_quartile,
                "wall_ms_per_step_upper_quartile": None if steps is None else steps.upper_quartile,
                "speed_vs_reference": versus,
                "peak_rss_bytes": None if memory is None else memory.peak_rss_bytes,
                "training_delta_bytes": None if memory is None else memory.training_delta_bytes,
                "parity": parity_phrase(parities.get(route.route), verdict.parity),
            }
        )
    return rows


def csv_text(rows: list[dict[str, Any]]) -> str:
    """The rows as CSV with a header line; a missing figure is an empty field."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: "" if value is None else value for key, value in row.items()})
    return buffer.getvalue()


def _mebibytes(count: int | None) -> str:
    return "–" if count is None else f"{count / 2**20:.1f}"


def _milliseconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def markdown_text(rows: list[dict[str, Any]]) -> str:
    """The rows as a GitHub Markdown table."""
    lines = [
        "| " + " | ".join(MARKDOWN_HEADERS) + " |",
        "| " + " | ".join("---" if i < 2 or i == 8 else "---:" for i in range(9)) + " |",
    ]
    for row in rows:
        low = row["wall_ms_per_step_lower_quartile"]
        high = row["wall_ms_per_step_upper_quartile"]
        interval = "–" if low is None else f"{_milliseconds(low)}–{_milliseconds(high)}"
        cells = (
            row["route"],
            row["status"],
            str(row["completed_repeats"]),
            _milliseconds(row["wall_ms_per_step_median"]),
            interval,
            row["speed_vs_reference"] or "–",
            _mebibytes(row["peak_rss_bytes"]),
            _mebibytes(row["training_delta_bytes"]),
            row["parity"],
        )
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def write_exports(
    verdict: Verdict, csv_path: str | os.PathLike[str] | None, markdown_path: str | None
) -> None:
    """Writes the CSV and the Markdown table where asked, each atomically; an `OSError`
    for the caller to put in words."""
    rows = export_rows(verdict)
    if csv_path is not None:
        write_bytes_atomically(csv_path, csv_text(rows).encode("utf-8"))
    if markdown_path is not None:
        write_bytes_atomically(markdown_path, markdown_text(rows).encode("utf-8"))

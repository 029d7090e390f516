"""`topos grade --export-csv FILE` and `--export-markdown FILE`: one row per route, as
hyperfine exports its runs, for a spreadsheet or a pull request's description.

Each row: the route, its status and completed repeats, the wall ms/step (median, and the
interquartile interval of its measured steps), its CPU ms/step, its time against the
reference as numbers (the ratio of its time to the reference's, and the interval's ends
where there is one: two usable repeats a side) beside the judgement in words (`faster`,
`slower`, `within tolerance`, `no clear difference`, `inconclusive`; `reference` for
the reference), peak RSS, training Δ and parity. A spreadsheet reads every figure as a
number; the Markdown table says the verdict's phrase. Written atomically (a reader sees
the old file or the new one), from the verdict the JSON holds, so they never disagree
with it.
"""

from __future__ import annotations

import csv
import io
import os
from typing import Any

from topos.system.atomic_file import write_bytes_atomically
from topos_cli.judge.verdict import Parity, RouteParity, Verdict

#: The CSV's columns, in order (also the keys of `export_rows`).
COLUMNS = (
    "route",
    "status",
    "completed_repeats",
    "wall_ms_per_step_median",
    "wall_ms_per_step_lower_quartile",
    "wall_ms_per_step_upper_quartile",
    "cpu_ms_per_step",
    "time_vs_reference",
    "time_vs_reference_lower",
    "time_vs_reference_upper",
    "judgement_vs_reference",
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
    "CPU ms/step",
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
    """One row per route of the verdict, keyed by `COLUMNS` (`None` for what is missing),
    plus `speed_phrase`, the verdict's words for the Markdown table."""
    parities = {route.route: route for route in verdict.parity.routes}
    rows = []
    for route in verdict.routes:
        speed, memory = route.speed, route.memory
        steps = None if speed is None else speed.milliseconds_per_step
        ratio = None if speed is None else speed.ratio
        judgement = None if ratio is None else ratio.judgement
        interval = judgement is not None and judgement.has_interval
        if route.route == verdict.reference:
            time, lower, upper, judged, phrase = 1.0, None, None, "reference", "reference"
        elif ratio is None:
            time = lower = upper = judged = phrase = None
        else:
            time, phrase = ratio.time_ratio.ratio, ratio.phrase
            lower = ratio.time_ratio.lower if interval else None
            upper = ratio.time_ratio.upper if interval else None
            judged = None if judgement is None else judgement.outcome
        rows.append(
            {
                "route": route.route,
                "status": route.status,
                "completed_repeats": route.completed,
                "wall_ms_per_step_median": None if steps is None else steps.median,
                "wall_ms_per_step_lower_quartile": None if steps is None else steps.lower_quartile,
                "wall_ms_per_step_upper_quartile": None if steps is None else steps.upper_quartile,
                "cpu_ms_per_step": None if speed is None else speed.cpu_milliseconds_per_step,
                "time_vs_reference": time,
                "time_vs_reference_lower": lower,
                "time_vs_reference_upper": upper,
                "judgement_vs_reference": judged,
                "peak_rss_bytes": None if memory is None else memory.peak_rss_bytes,
                "training_delta_bytes": None if memory is None else memory.training_delta_bytes,
                "parity": parity_phrase(parities.get(route.route), verdict.parity),
                "speed_phrase": phrase,
            }
        )
    return rows


def csv_text(rows: list[dict[str, Any]]) -> str:
    """The rows as CSV with a header line; a missing figure is an empty field."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: "" if row[key] is None else row[key] for key in COLUMNS})
    return buffer.getvalue()


def _mebibytes(count: int | None) -> str:
    return "–" if count is None else f"{count / 2**20:.1f}"


def _milliseconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def markdown_text(rows: list[dict[str, Any]]) -> str:
    """The rows as a GitHub Markdown table."""
    lines = [
        "| " + " | ".join(MARKDOWN_HEADERS) + " |",
        "| "
        + " | ".join("---" if i < 2 or i == 9 else "---:" for i in range(len(MARKDOWN_HEADERS)))
        + " |",
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
            _milliseconds(row["cpu_ms_per_step"]),
            row["speed_phrase"] or "–",
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

"""The rows the CSV and the Markdown exports share: one per route of a verdict, as
hyperfine exports its runs.

Each row: the route, its status and completed repeats, the wall ms/step (median, and the
interquartile interval of its measured steps), its CPU ms/step, its time against the
reference as numbers (the ratio of its time to the reference's, and the interval's ends
where there is one: two usable repeats a side) beside the judgement in words (`faster`,
`slower`, `within tolerance`, `no clear difference`, `inconclusive`; `reference` for
the reference), peak RSS, training Δ and parity. A native route's (a PyTorch or JAX
step's) rows also hold its step tensors beside the training Δ: its memory, where RSS sees
only the heap's growth (`step_tensors`); topos's own routes' rows are as they were.
"""

from __future__ import annotations

from typing import Any

from topos_cli.render.parity_words import parity_words
from topos_cli.render.step_tensors import shows_step_tensors
from topos_cli.render.verdict_record import Drawable, verdict_record
from topos_cli.result.parity_record import ParityRecord, RouteParityRecord

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

#: A native verdict's column beside the training Δ (`export_columns`).
STEP_TENSOR_BYTES = "step_tensor_bytes"


def export_columns(drawn: Drawable) -> tuple[str, ...]:
    """The CSV's columns for the verdict `drawn`: `COLUMNS`, with the step tensors after
    the training Δ where the verdict's routes have them (a native step's)."""
    if not shows_step_tensors(verdict_record(drawn)):
        return COLUMNS
    where = COLUMNS.index("training_delta_bytes") + 1
    return (*COLUMNS[:where], STEP_TENSOR_BYTES, *COLUMNS[where:])


def parity_phrase(route: RouteParityRecord | None, parity: ParityRecord) -> str:
    """One route's parity in a few words, as the verdict's table says it (`not checked`
    where the table shows a dash)."""
    words = parity_words(route, parity)
    return "not checked" if words is None else words


def export_rows(drawn: Drawable) -> list[dict[str, Any]]:
    """One row per route of the verdict `drawn`, keyed by `COLUMNS` and `STEP_TENSOR_BYTES`
    (`None` for what is missing), plus `speed_phrase`, the verdict's words for the Markdown
    table."""
    verdict = verdict_record(drawn)
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
                STEP_TENSOR_BYTES: None if memory is None else memory.step_tensor_bytes_or_none,
                "parity": parity_phrase(parities.get(route.route), verdict.parity),
                "speed_phrase": phrase,
            }
        )
    return rows

"""`topos grade --github-benchmark FILE`: the benchmark list github-action-benchmark
reads (`customSmallerIsBetter`).

Per route: the median ms/step (range: half the IQR), and the peak RSS and training
delta in bytes (range: half the spread across repeats); a native route (a PyTorch or JAX
step) also its step tensors in bytes, its memory where RSS sees only the heap's growth
(median over repeats; the verdict keeps no spread of them, so the entry has no range).
Names are
`<workload> <route>: <figure>`, stable across runs so the action can chart them.
"""

from __future__ import annotations

from typing import Any

from topos_cli.render.exporters.exported_grade import ExportedGrade
from topos_cli.render.verdict_record import Drawable, verdict_record
from topos_cli.result.result_file import dumps


def github_benchmark_entries(workload: str, drawn: Drawable | None) -> list[dict[str, Any]]:
    """The entries for every route of the verdict `drawn`, a grade of `workload` (none
    without one)."""
    entries: list[dict[str, Any]] = []
    verdict = None if drawn is None else verdict_record(drawn)
    for route in verdict.routes if verdict is not None else ():
        repeats = f"{route.completed} of {route.repeats} repeats completed"
        speed = route.speed
        if speed is not None:
            steps = speed.milliseconds_per_step
            first = speed.first_step_milliseconds
            first_text = "" if first is None else f"; first step {first:.3f} ms"
            entries.append(
                {
                    "name": f"{workload} {route.route}: time per step",
                    "unit": "ms/step",
                    "value": steps.median,
                    "range": f"± {steps.interquartile_range / 2:.3f}",
                    "extra": (
                        f"median of {steps.count} steps; IQR {steps.lower_quartile:.3f} "
                        f"to {steps.upper_quartile:.3f} ms; {repeats}{first_text}"
                    ),
                }
            )
        memory = route.memory
        if memory is None:
            continue
        for figure, value, spread in (
            ("peak RSS", memory.peak_rss_bytes, memory.peak_rss_range),
            ("training delta", memory.training_delta_bytes, memory.training_delta_range),
        ):
            if value is None:
                continue
            low, high = spread or (value, value)
            entries.append(
                {
                    "name": f"{workload} {route.route}: {figure}",
                    "unit": "bytes",
                    "value": value,
                    "range": f"± {(high - low) / 2:.0f}",
                    "extra": f"median over repeats; from {low} to {high} bytes; {repeats}",
                }
            )
        if memory.step_tensor_bytes_or_none is not None:
            entries.append(
                {
                    "name": f"{workload} {route.route}: step tensors",
                    "unit": "bytes",
                    "value": memory.step_tensor_bytes_or_none,
                    "extra": (
                        f"the step's own tensors at their peak, as its framework counts "
                        f"them; median over repeats; {repeats}"
                    ),
                }
            )
    return entries


class GithubBenchmarkExporter:
    """The entries as the JSON topos writes (an empty list when no route ran, so the
    action still reads a file)."""

    name = "github-benchmark"
    option = "--github-benchmark"
    suffix = ".json"
    standard_output = True

    def export(self, grade: ExportedGrade) -> str | None:
        """The JSON text of `github_benchmark_entries`."""
        return dumps(github_benchmark_entries(grade.workload, grade.verdict))

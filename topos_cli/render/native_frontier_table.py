"""A native frontier's table: one row per route of a PyTorch or JAX step (its budget,
ms/step and interval, heap growth, peak RSS, its step tensors with PyTorch's
partitioner's estimate beside them, and its flags), and the lines saying what the
figures are. Printed by `topos frontier` on a native workload.

The training Δ (peak minus ready RSS) is headed `heap Δ`: a native route's worker keeps
glibc's mmap threshold, so what its warm-up steps freed stays in the heap, and the Δ is
only the heap's growth beyond them; the step tensors are the step's memory
(`topos.native.step_tensors`)."""

from __future__ import annotations

from collections.abc import Sequence

from topos_cli.render.native_frontier_point import NativeFrontierPoint
from topos_cli.shared.units import MEBIBYTE, format_milliseconds

NATIVE_HEADERS = (
    "point",
    "budget",
    "ms/step",
    "interval ms",
    "heap Δ MiB",
    "peak RSS MiB",
    "step MiB",
    "PyTorch's estimate: saved / allowed MiB, recomputed",
    "flag",
)


def _mebibytes(value: float | None) -> str:
    return "?" if value is None else f"{value / MEBIBYTE:.1f}"


#: How each source counts a step's tensors, for the line under the table.
SOURCE_WORDS = {
    "torch.profiler": "PyTorch's profiler over step 0's forward and backward pass",
    "xla buffer assignment": "XLA's buffer assignment of the compiled step: temp + output - alias",
}


def _step_tensors(value: int | None) -> str:
    """Step tensors in MiB, two decimals (beside the estimate's), `?` from an older worker."""
    return "?" if value is None else f"{value / MEBIBYTE:.2f}"


def _runtime(value: float, unit: str) -> str:
    """A recomputed runtime in its estimator's unit: FLOPs scaled (`4.2 MFLOP`)."""
    if unit != "flops":
        return f"{value:g} ({unit})"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.1f} {prefix}FLOP"
    return f"{value:.0f} FLOP"


def estimate_words(point: NativeFrontierPoint) -> str:
    """What PyTorch's partitioner estimated of `point`'s plan, in a cell: `—` for a route
    it does not plan (eager, checkpointed, JAX), `no estimate` where it could not be read."""
    if not point.compiled and not point.estimates:
        return "—"
    if not point.estimates:
        return "no estimate"
    words = f"{point.saved_bytes / MEBIBYTE:.2f} / {point.allowed_bytes / MEBIBYTE:.2f}"
    recomputed = point.recomputed_runtime
    if recomputed is None:
        return f"{words}, none chosen"
    return f"{words}, {_runtime(recomputed, point.estimates[0].runtime_unit)}"


#: The columns a frontier without budgets (a JAX step's policies) leaves out: every
#: cell of them would be a dash.
BUDGET_COLUMNS = (1, 7)


def _has_budgets(points: Sequence[NativeFrontierPoint]) -> bool:
    return any(point.budget is not None or point.compiled for point in points)


def native_frontier_headers(points: Sequence[NativeFrontierPoint]) -> tuple[str, ...]:
    """The table's headers: without the budget and PyTorch's estimate where no point has
    either (a JAX step's policies)."""
    if _has_budgets(points):
        return NATIVE_HEADERS
    return tuple(name for index, name in enumerate(NATIVE_HEADERS) if index not in BUDGET_COLUMNS)


def native_frontier_rows(points: Sequence[NativeFrontierPoint]) -> list[list[str]]:
    """The table's rows: one per point, in the order they ran, with the columns
    `native_frontier_headers` gives."""
    rows = []
    for point in points:
        interval = "?"
        if point.low is not None and point.high is not None:
            interval = f"{format_milliseconds(point.low)}–{format_milliseconds(point.high)}"
        rows.append(
            [
                point.label if point.status == "ok" else f"{point.label} ({point.status})",
                "—" if point.budget is None else f"{point.budget:g}",
                "?" if point.milliseconds is None else format_milliseconds(point.milliseconds),
                interval,
                _mebibytes(point.training_delta_bytes),
                _mebibytes(point.peak_rss_bytes),
                _step_tensors(point.step_tensor_bytes),
                estimate_words(point),
                "⚠ flagged" if point.flags else "",
            ]
        )
    if not _has_budgets(points):
        rows = [
            [cell for index, cell in enumerate(row) if index not in BUDGET_COLUMNS] for row in rows
        ]
    return rows


def native_frontier_notes(points: Sequence[NativeFrontierPoint]) -> list[str]:
    """The lines under the table: each flag, why a compiled point has no estimate, and
    what the estimate is (said once, where there is one)."""
    lines = [f"⚠ {point.label}: {flag}" for point in points for flag in point.flags]
    for point in points:
        if point.no_estimate is not None:
            lines.append(f"{point.label}: no estimate: {point.no_estimate}")
        elif point.compiled and not point.estimates:
            lines.append(
                f"{point.label}: no estimate: PyTorch's partitioner planned no graph it "
                f"was asked about (a route of your own that compiles: call "
                f"topos.native.partitioner_estimate.record_estimates() before torch.compile)"
            )
    sources = {point.step_tensor_source for point in points if point.step_tensor_bytes}
    if sources:
        counted = "; ".join(
            SOURCE_WORDS.get(source, str(source)) for source in sorted(sources, key=str)
        )
        lines.append(
            f"step MiB: the peak bytes of the step's own tensors, as its framework counts "
            f"them ({counted}); heap Δ: peak minus ready RSS, only the heap's growth "
            f"beyond the warm-up steps' (freed tensors stay in the heap), not the step's "
            f"memory"
        )
    if any(point.estimates for point in points):
        lines.append(
            "PyTorch's estimate is its partitioner's own, per compiled graph summed: the "
            "bytes its plan saves for the backward pass, the bytes its budget allows (the "
            "graph inputs' plus budget × the way to its unbudgeted cut's), and the runtime "
            "its knapsack chose to recompute (its FLOP count); 'interval ms' is the lowest "
            "to highest repeat median (one repeat: the steps' quartiles)"
        )
    return lines

"""A native frontier's points: each route of a PyTorch or JAX step as measured (ms/step
with its interval, step tensors, heap growth, peak RSS), PyTorch's partitioner's
estimate beside a compiled one, and the flags its memory earns.

A point is flagged when it measures more memory than a point of a larger budget (the
budgets' order is the memory they allow, so a smaller budget that costs more has broken
the promise: PyTorch's tracker has a budget of 0.05 peaking above one of 0.15), or when
PyTorch's own plan saves more bytes than its budget allows (the knapsack's answer over
its `max_memory`). Measured memory is the step tensors (`topos.native.step_tensors`:
the framework's own count of the step's tensors at its peak) where every budget point
has them; else, from an older worker, the training Δ, which for a native route is only
the heap's growth beyond the warm-up steps' (freed tensors stay in glibc's heap), and
a compiled route's peak RSS also holds its compiler.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from topos.names import compile_budget_of
from topos_cli.render.frontier_picture import FrontierPoint, frontier_points_of
from topos_cli.render.verdict_record import Drawable, verdict_record
from topos_cli.result.worker_facts import PartitionerFacts
from topos_cli.shared.units import MEBIBYTE

#: Below this many bytes, one training Δ above another is noise, not a flag: two runs of
#: the example transformer's eager step, 700 MiB resident, read 4.1 and 1.3 MiB.
LEAST_FLAGGED_BYTES = 4 * MEBIBYTE


@dataclass(frozen=True)
class NativeFrontierPoint:
    """One route of a native frontier: its label (the route), its activation memory
    budget (`compile-budget-<b>`; None for the references and JAX's policies), its
    measured figures, its partitioner's estimate (one entry per compiled graph; empty
    for an eager route; `no_estimate` says why a compiled one has none) and its flags."""

    label: str
    budget: float | None
    status: str
    milliseconds: float | None = None
    low: float | None = None
    high: float | None = None
    training_delta_bytes: int | None = None
    peak_rss_bytes: int | None = None
    #: The step's own tensors at their peak (`NativeFacts.step_tensor_bytes`).
    step_tensor_bytes: int | None = None
    #: Who counted them: `torch.profiler` or `xla buffer assignment`.
    step_tensor_source: str | None = None
    estimates: tuple[PartitionerFacts, ...] = ()
    no_estimate: str | None = None
    compiled: bool = False
    flags: tuple[str, ...] = field(default=())

    @property
    def saved_bytes(self) -> int | None:
        """The bytes PyTorch's plan saves for the backward pass, summed over its graphs."""
        return sum(entry.saved_bytes for entry in self.estimates) if self.estimates else None

    @property
    def allowed_bytes(self) -> float | None:
        """The saved bytes its budget allows, summed over its graphs."""
        return sum(entry.allowed_bytes for entry in self.estimates) if self.estimates else None

    @property
    def unbudgeted_bytes(self) -> int | None:
        """The bytes the unbudgeted (runtime-optimised) cut saves, summed over its graphs."""
        return sum(entry.unbudgeted_bytes for entry in self.estimates) if self.estimates else None

    @property
    def recomputed_runtime(self) -> float | None:
        """The runtime the knapsack chose to recompute (its estimator's unit), summed over
        the graphs where it ran; None where it ran on none."""
        ran = [entry.recomputed_runtime for entry in self.estimates]
        ran = [value for value in ran if value is not None]
        return sum(ran) if ran else None


def _native(run: Any) -> Any:
    ready = run.facts.ready
    return None if ready is None else ready.native


def native_frontier_points(
    repeats: Sequence[Any], drawn: Drawable | None, memory_tolerance: float = 0.05
) -> list[NativeFrontierPoint]:
    """Every route the verdict judged, in its order, measured as `frontier_points_of`
    draws it, with its first repeat's partitioner estimate, and flagged
    (`flag_memory`)."""
    if drawn is None:
        return []
    verdict = verdict_record(drawn)
    pictured = {point.label: point for point in frontier_points_of(verdict)}
    points = []
    for route in verdict.routes:
        native = next(
            (facts for run in repeats if run.route == route.route for facts in [_native(run)]),
            None,
        )
        picture = pictured.get(route.route)
        memory = route.memory
        points.append(
            NativeFrontierPoint(
                label=route.route,
                budget=compile_budget_of(route.route),
                status=route.status,
                milliseconds=None if picture is None else picture.milliseconds,
                low=None if picture is None else picture.low,
                high=None if picture is None else picture.high,
                training_delta_bytes=None if memory is None else memory.training_delta_bytes,
                peak_rss_bytes=None if memory is None else memory.peak_rss_bytes,
                step_tensor_bytes=None if memory is None else memory.step_tensor_bytes_or_none,
                step_tensor_source=None if native is None else native.step_tensor_source,
                estimates=() if native is None else tuple(native.partitioner),
                no_estimate=None if native is None else native.partitioner_unavailable,
                compiled=native is not None and not native.exact and native.framework == "torch",
            )
        )
    return flag_memory(points, memory_tolerance)


def _measured(point: NativeFrontierPoint, by_step_tensors: bool) -> int | None:
    return point.step_tensor_bytes if by_step_tensors else point.training_delta_bytes


def flag_memory(
    points: Sequence[NativeFrontierPoint], memory_tolerance: float
) -> list[NativeFrontierPoint]:
    """`points`, each budget point flagged where its memory exceeds a larger budget's
    point's by more than `memory_tolerance` of it (named: the larger budget whose point
    is the leanest), and where its partitioner's plan saves more than its budget allows.
    The memory is the step tensors where every budget point has them, else the
    training Δ, which must also exceed by `LEAST_FLAGGED_BYTES` (its noise)."""
    budgets = [point for point in points if point.budget is not None]
    by_step_tensors = bool(budgets) and all(
        point.step_tensor_bytes is not None for point in budgets
    )
    least = 0 if by_step_tensors else LEAST_FLAGGED_BYTES
    figure = "step tensors" if by_step_tensors else "training Δ"
    budgeted = [point for point in budgets if _measured(point, by_step_tensors) is not None]
    flagged = []
    for point in points:
        flags = []
        if point in budgeted:
            measured = _measured(point, by_step_tensors)
            leaner = [
                other
                for other in budgeted
                if other.budget > point.budget
                and measured - _measured(other, by_step_tensors)
                > max(memory_tolerance * abs(_measured(other, by_step_tensors)), least)
            ]
            if leaner:
                leanest = min(leaner, key=lambda other: _measured(other, by_step_tensors))
                flags.append(
                    f"more memory than budget {leanest.budget:g}'s point: {figure} "
                    f"{measured / MEBIBYTE:.1f} MiB against "
                    f"{_measured(leanest, by_step_tensors) / MEBIBYTE:.1f} MiB"
                )
        saved, allowed = point.saved_bytes, point.allowed_bytes
        # A byte's rounding aside: the partitioner's own sizes, compared as it compares them.
        if saved is not None and allowed is not None and saved > allowed + 1:
            flags.append(
                f"PyTorch's plan saves {saved / MEBIBYTE:.2f} MiB, more than the "
                f"{allowed / MEBIBYTE:.2f} MiB its budget allows"
            )
        flagged.append(replace(point, flags=tuple(flags)))
    return flagged


#: The picture's memory axis where its points are step tensors (`picture_axis`).
STEP_TENSOR_AXIS = "step tensors (MiB): the step's own tensors at their peak"


def _by_step_tensors(points: Sequence[NativeFrontierPoint]) -> bool:
    """Whether every point has its step tensors (a current worker's): then they are drawn."""
    return bool(points) and all(point.step_tensor_bytes is not None for point in points)


def picture_axis(points: Sequence[NativeFrontierPoint]) -> str | None:
    """The picture's memory axis: the step tensors where every point has them, else None
    (the training Δ's, `frontier_svg`'s own)."""
    return STEP_TENSOR_AXIS if _by_step_tensors(points) else None


def picture_points(
    points: Sequence[NativeFrontierPoint], verdict: Drawable | None
) -> list[FrontierPoint]:
    """The picture's points (`frontier_points_of`), a flagged one's label marked `⚠`, each
    at its step tensors where every point has them (`picture_axis`)."""
    marked = {point.label for point in points if point.flags}
    tensors = {point.label: point.step_tensor_bytes for point in points}
    drawn = []
    for point in frontier_points_of(verdict):
        if _by_step_tensors(points) and tensors.get(point.label) is not None:
            point = replace(point, training_mebibytes=tensors[point.label] / MEBIBYTE)
        drawn.append(replace(point, label=f"⚠ {point.label}") if point.label in marked else point)
    return drawn

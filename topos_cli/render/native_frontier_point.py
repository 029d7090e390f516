"""A native frontier's points: each route of a PyTorch or JAX step as measured (ms/step
with its interval, training Δ, peak RSS), PyTorch's partitioner's estimate beside a
compiled one, and the flags its memory earns.

A point is flagged when it measures more memory than a point of a larger budget (the
budgets' order is the memory they allow, so a smaller budget that costs more has broken
the promise: PyTorch's tracker has a budget of 0.05 peaking above one of 0.15), or when
PyTorch's own plan saves more bytes than its budget allows (the knapsack's answer over
its `max_memory`). Measured memory is training Δ, the memory a step adds: a compiled
route's peak RSS also holds its compiler.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from topos.names import compile_budget_of
from topos_cli.render.frontier_picture import FrontierPoint, frontier_points_of
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
    repeats: Sequence[Any], verdict: Any, memory_tolerance: float = 0.05
) -> list[NativeFrontierPoint]:
    """Every route the verdict judged, in its order, measured as `frontier_points_of`
    draws it, with its first repeat's partitioner estimate, and flagged
    (`flag_memory`)."""
    if verdict is None:
        return []
    drawn = {point.label: point for point in frontier_points_of(verdict)}
    points = []
    for route in verdict.routes:
        native = next(
            (facts for run in repeats if run.route == route.route for facts in [_native(run)]),
            None,
        )
        picture = drawn.get(route.route)
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
                estimates=() if native is None else tuple(native.partitioner),
                no_estimate=None if native is None else native.partitioner_unavailable,
                compiled=native is not None and not native.exact and native.framework == "torch",
            )
        )
    return flag_memory(points, memory_tolerance)


def flag_memory(
    points: Sequence[NativeFrontierPoint], memory_tolerance: float
) -> list[NativeFrontierPoint]:
    """`points`, each budget point flagged where its training Δ exceeds a larger budget's
    point's by more than `memory_tolerance` of it and `LEAST_FLAGGED_BYTES` (named: the
    larger budget whose point is the leanest), and where its partitioner's plan saves
    more than its budget allows."""
    budgeted = [
        point
        for point in points
        if point.budget is not None and point.training_delta_bytes is not None
    ]
    flagged = []
    for point in points:
        flags = []
        if point in budgeted:
            measured = point.training_delta_bytes
            leaner = [
                other
                for other in budgeted
                if other.budget > point.budget
                and measured - other.training_delta_bytes
                > max(memory_tolerance * abs(other.training_delta_bytes), LEAST_FLAGGED_BYTES)
            ]
            if leaner:
                leanest = min(leaner, key=lambda other: other.training_delta_bytes)
                flags.append(
                    f"more memory than budget {leanest.budget:g}'s point: training Δ "
                    f"{measured / MEBIBYTE:.1f} MiB against "
                    f"{leanest.training_delta_bytes / MEBIBYTE:.1f} MiB"
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


def picture_points(points: Sequence[NativeFrontierPoint], verdict: Any) -> list[FrontierPoint]:
    """The picture's points (`frontier_points_of`), a flagged one's label marked `⚠`."""
    marked = {point.label for point in points if point.flags}
    return [
        replace(point, label=f"⚠ {point.label}") if point.label in marked else point
        for point in frontier_points_of(verdict)
    ]

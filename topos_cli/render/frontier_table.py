"""A frontier's table: one row per graded point (its budget, planned bytes,
recomputations, lowering, ms/step, predicted and measured training Δ, peak RSS, and its
judgement against recorded), and the line naming the part of the step a remat budget
does not bound. Printed by `topos frontier`, shown by `topos report` on its result."""

from __future__ import annotations

from topos_cli.judge.verdict import Verdict
from topos_cli.result.grade_result import GradeResult, RouteFacts
from topos_cli.result.worker_facts import LiveVolume
from topos_cli.shared.units import MEBIBYTE, format_bytes, format_milliseconds

HEADERS = (
    "point",
    "budget",
    "planned MiB",
    "recomputed",
    "lowering s",
    "ms/step",
    "predicted Δ MiB",
    "training Δ MiB",
    "peak RSS MiB",
    "against recorded",
)


def frontier_rows(result: GradeResult, verdict: Verdict | None) -> list[list[str]]:
    """The table's rows: one per graded point, in the order they ran."""
    rows = []
    if verdict is None:
        return rows
    pairings = {pairing.route: pairing for pairing in verdict.pairings}
    # The step's predicted memory (the plan's planned bytes and what its budget does not
    # bound), set beside the measured training Δ it predicts.
    predicted = {
        entry.route: entry.predicted_training_bytes
        for entry in result.memory_prediction
        if entry.predicted_training_bytes is not None
    }
    for route in verdict.routes:
        route_facts = result.routes.get(route.route) or RouteFacts()
        remat = route_facts.remat
        volume = route_facts.live_volume or LiveVolume()
        speed, memory = route.speed, route.memory
        planned = volume.plan_training_bytes if remat is None else remat.planned_bytes
        budget = "—"
        recomputed = "—"
        if remat is not None:
            budget = f"{format_bytes(remat.budget_bytes)} ({100 * remat.budget_fraction:.0f}%)"
            recomputed = f"{remat.recomputations} (+{100 * remat.extra_flops_fraction:.1f}%)"
        pairing = pairings.get(route.route)
        rows.append(
            [
                route.route if route.completed else f"{route.route} ({route.status})",
                budget,
                "?" if planned is None else f"{planned / MEBIBYTE:.1f}",
                recomputed,
                "?" if route_facts.lower_seconds is None else f"{route_facts.lower_seconds:.2f}",
                "?" if speed is None else format_milliseconds(speed.milliseconds_per_step.median),
                "?" if route.route not in predicted else f"{predicted[route.route] / MEBIBYTE:.1f}",
                "?"
                if memory is None or memory.training_delta_bytes is None
                else f"{memory.training_delta_bytes / MEBIBYTE:.1f}",
                "?"
                if memory is None or memory.peak_rss_bytes is None
                else f"{memory.peak_rss_bytes / MEBIBYTE:.1f}",
                "—" if pairing is None else pairing.phrase.removeprefix("against recorded: "),
            ]
        )
    return rows


def unbounded_line(result: GradeResult) -> str | None:
    """What of the step a remat budget does not bound, said once: the step memory beyond
    the plan's planned bytes (gradients, optimizer state, the update, the shards' mean),
    which every point's training Δ holds beside them; None without a remat point that
    says both."""
    fixed = []
    for facts in result.routes.values():
        remat, step = facts.remat, facts.step_memory
        if remat is None or step is None or step.total_bytes is None:
            continue
        fixed.append(step.total_bytes - remat.planned_bytes)
    if not fixed:
        return None
    low, high = min(fixed), max(fixed)
    amount = (
        format_bytes(low)
        if high - low < MEBIBYTE // 10
        else f"{format_bytes(low)} to {format_bytes(high)}"
    )
    return (
        f"training Δ holds, beside each remat point's planned bytes, {amount} of the step "
        f"its budget does not bound (gradients, optimizer state, the update, the shards' "
        f"mean); 'lowering s' is each route's lowering at ready"
    )

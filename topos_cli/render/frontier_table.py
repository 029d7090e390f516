"""A frontier's table: one row per graded point (its budget, planned bytes,
recomputations, lowering, ms/step, predicted and measured training Δ, peak RSS, and its
judgement against recorded), and the line naming the part of the step a remat budget
does not bound. Printed by `topos frontier`, shown by `topos report` on its result."""

from __future__ import annotations

from topos_cli.render.verdict_record import Drawable, verdict_record
from topos_cli.result.grade_result import GradeResult, RouteFacts
from topos_cli.result.worker_facts import LiveVolume, StepMemoryFacts
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


def frontier_rows(result: GradeResult, drawn: Drawable | None) -> list[list[str]]:
    """The table's rows: one per graded point, in the order they ran."""
    rows: list[list[str]] = []
    if drawn is None:
        return rows
    verdict = verdict_record(drawn)
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
                _lowering(route_facts),
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


#: The step memory's parts a remat budget does not bound, in the words people read. The
#: others (the plans' arena and roots, the gradients among those roots) are the plan's
#: planned bytes, what the budget bounds.
UNBOUNDED_PARTS = {
    "feeds": "feeds",
    "shards_mean": "shards' mean",
    "update": "update",
    "optimizer_state": "optimizer state",
    "backward_arena": "backward arena",
}


def unbounded_parts(step: StepMemoryFacts) -> dict[str, int] | None:
    """The parts of a step memory record its remat budget does not bound
    (`UNBOUNDED_PARTS`), by name; None when the record holds no parts."""
    if not step.parts:
        return None
    return {name: step.parts.get(name, 0) for name in UNBOUNDED_PARTS}


def unbounded_line(result: GradeResult) -> str | None:
    """What of the step a remat budget does not bound, said once: the sum of the step
    memory's own parts beyond the plan's (`unbounded_parts`: feeds, the shards' mean, the
    update, the optimizer's state), which every point's training Δ holds beside its
    planned bytes; for a record without parts, its total less the planned bytes, said so.
    None without a remat point that says either."""
    fixed: list[int] = []
    parts_of: list[dict[str, int]] = []
    subtracted = False
    for facts in result.routes.values():
        remat, step = facts.remat, facts.step_memory
        if remat is None or step is None:
            continue
        parts = unbounded_parts(step)
        if parts is not None:
            fixed.append(sum(parts.values()))
            parts_of.append(parts)
        elif step.total_bytes is not None:
            fixed.append(step.total_bytes - remat.planned_bytes)
            subtracted = True
    if not fixed:
        return None
    low, high = min(fixed), max(fixed)
    amount = (
        format_bytes(low)
        if high - low < MEBIBYTE // 10
        else f"{format_bytes(low)} to {format_bytes(high)}"
    )
    if subtracted:
        what = "the step memory's total less the planned bytes (the result records no parts of it)"
    else:
        what = f"its step memory's {_named_parts(parts_of)}"
    return (
        f"training Δ holds, beside each remat point's planned bytes (its plan's arena and "
        f"roots, the gradients among them), {amount} of the step its budget does not bound: "
        f"{what}; 'lowering s' is each route's lowering at ready (remat's search, when "
        f"the planning child ran it before the workers, after the '+')"
    )


def _lowering(route_facts: RouteFacts) -> str:
    """A route's lowering seconds at ready, with remat's search in the planning child
    after a '+' (`0.02+1.85`) when it ran there."""
    if route_facts.lower_seconds is None:
        return "?"
    if route_facts.planning_seconds is None:
        return f"{route_facts.lower_seconds:.2f}"
    return f"{route_facts.lower_seconds:.2f}+{route_facts.planning_seconds:.2f}"


def _named_parts(parts_of: list[dict[str, int]]) -> str:
    """The parts that hold bytes at any point, each with its size where every point agrees
    (`feeds 772.0 KiB + update 64.0 KiB`), or `parts beyond the plan's: none`."""
    named = []
    for name, words in UNBOUNDED_PARTS.items():
        sizes = {parts[name] for parts in parts_of}
        if sizes == {0}:
            continue
        named.append(f"{words} {format_bytes(sizes.pop())}" if len(sizes) == 1 else words)
    return " + ".join(named) if named else "parts beyond the plan's: none"

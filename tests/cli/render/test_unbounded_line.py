"""The frontier's line naming what a remat budget does not bound is the step memory's own
parts beyond the plan (feeds, the shards' mean, the update, the optimizer's state), on
models written as users write them, not the step memory's total less the planned bytes
(on a GRU that was negative: the parts count pages as the heap renews them); a record
without parts keeps the subtraction and says so."""

from __future__ import annotations

import pytest

from topos_cli.render.frontier_table import UNBOUNDED_PARTS, unbounded_line
from topos_cli.result.grade_result import GradeResult, RouteFacts, WorkloadFacts
from topos_cli.result.worker_facts import StepMemoryFacts
from topos_cli.shared.units import format_bytes


def remat_point(name: str, budget: str) -> RouteFacts:
    """What a remat worker of workload `name` says at ready under `budget`."""
    from topos.training.training import Training
    from topos.workloads import resolve
    from topos_cli.worker.route_worker import remat_facts

    workload = resolve(name)
    training = Training(workload, "remat", workload.dataset(None), 1, budget)
    return RouteFacts(
        remat=remat_facts(training.program.plan, training.program.shards),
        step_memory=StepMemoryFacts.from_json(training.step_memory().to_json()),
    )


def frontier_of(points: dict[str, RouteFacts]) -> GradeResult:
    """A frontier's result holding only its points' facts."""
    return GradeResult(workload=WorkloadFacts(name="t"), steps=3, routes=points)


@pytest.mark.parametrize(
    "name", ["tests.support.user_models:gru_workload", "tests.cli.tiny_workloads:sharded"]
)
def test_the_fixed_part_is_the_step_memorys_own_parts_beyond_the_plan(name):
    points = {f"remat@{budget}": remat_point(name, budget) for budget in ("100%", "floor")}
    line = unbounded_line(frontier_of(points))
    fixed = set()
    for facts in points.values():
        parts = facts.step_memory.parts
        fixed.add(sum(parts[part] for part in UNBOUNDED_PARTS))
        # Every part is the plan's or named as not bounded by its budget.
        assert set(parts) - set(UNBOUNDED_PARTS) == {"arena", "roots", "gradients"}
    (amount,) = fixed  # the same at every budget: nothing of it is the plan's
    assert "planned bytes (its plan's arena and roots, the gradients among them), " in line
    assert f", {format_bytes(amount)} of the step its budget does not bound: " in line
    # Each part that holds bytes is named with its size, and none that holds none.
    named = line.split("its step memory's ")[1].split(";")[0]
    sizes = {part: facts.step_memory.parts[part] for part in UNBOUNDED_PARTS}
    assert any(sizes.values())
    for part, words in UNBOUNDED_PARTS.items():
        if sizes[part]:
            assert f"{words} {format_bytes(sizes[part])}" in named, part
        else:
            assert words not in named, part
    subtracted = {
        facts.step_memory.total_bytes - facts.remat.planned_bytes for facts in points.values()
    }
    assert subtracted != {amount}  # what the line said before, and said wrong


def test_a_record_without_parts_keeps_the_subtraction_and_says_so():
    point = remat_point("tests.cli.tiny_workloads:tiny", "100%")
    total = 3 * 1024 * 1024 + point.remat.planned_bytes
    point = RouteFacts(remat=point.remat, step_memory=StepMemoryFacts(total_bytes=total))
    line = unbounded_line(frontier_of({"remat@100%": point}))
    assert ", 3.0 MiB of the step its budget does not bound: " in line
    assert "total less the planned bytes (the result records no parts of it)" in line
    assert unbounded_line(frontier_of({"recorded": RouteFacts()})) is None

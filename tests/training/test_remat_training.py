"""The three routes train bit-identically on the built-in workloads: engine, recorded,
and remat at its default budget and at its floor, the same loss bits at every step
and the same parameters at the end (a recomputation runs the same kernel on the same
operands, so it computes the same bits)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from topos.datasets import load_cifar10, load_mnist
from topos.engine.remat_plan import RematPlan
from topos.training import Training
from topos.workloads import resolve

LOADERS = {"cifar10": load_cifar10, "mnist": load_mnist}
STEPS = 3


def trained(name: str, dataset, route: str, budget=None) -> tuple[list[bytes], list[bytes]]:
    """The loss bits of each step and the final parameters' bytes."""
    training = Training(resolve(name), route, dataset, STEPS, budget)
    losses = [np.float32(training.step(step)).tobytes() for step in range(STEPS)]
    parameters = [
        training.parameters.of(symbol).numpy().tobytes() for symbol in training.recording.parameters
    ]
    return losses, parameters


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_three_routes_train_bit_identically(name: str):
    dataset = LOADERS[name](None)
    engine = trained(name, dataset, "engine")
    assert trained(name, dataset, "recorded") == engine
    assert trained(name, dataset, "remat") == engine
    assert trained(name, dataset, "remat", "floor") == engine


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_remat_plans_recompute_within_their_budget(name: str):
    dataset = LOADERS[name](None)
    # On threads, so every shard's arena is in this process (in processes, shard 1's is
    # its child's).
    workload = replace(resolve(name), shard_processes=False)
    training = Training(workload, "remat", dataset, STEPS, "floor")
    plans = training.program.plans
    assert len(plans) == resolve(name).shards
    for plan in plans:
        assert isinstance(plan, RematPlan)
        assert plan.recomputations > 0
        assert plan.planned_bytes <= plan.budget_bytes == plan.floor_bytes
        assert plan.planned_bytes < 0.7 * plan.unconstrained.predicted_training_bytes
    # Each shard's plan has an arena of its own.
    training.step(0)
    blocks = [block for plan in plans for block in plan.arena_blocks()]
    assert len(blocks) == len(plans)
    for position, block in enumerate(blocks):
        for other in blocks[position + 1 :]:
            assert not np.may_share_memory(block, other)


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_the_step_memory_of_a_remat_route_counts_its_plans(name: str):
    from topos.training import RouteProgram, step_memory

    workload = resolve(name)
    remat = RouteProgram(workload, "remat", "floor")
    recorded = RouteProgram(workload, "recorded")
    assert remat.plan.recomputations > 0
    # Its program's positions are not node indices: the fresh roots are named by node.
    assert remat.plan.fresh_roots == recorded.plan.fresh_roots
    memory = step_memory(remat, workload.optimizer())
    baseline = step_memory(recorded, workload.optimizer())
    assert memory.total < baseline.total
    assert memory.to_json()["parts"]["gradients"] == baseline.to_json()["parts"]["gradients"]


def test_cifar10s_default_budget_is_half_of_recordeds_and_met():
    # Issue 13's target budget: half the recorded plan's planned bytes, met as asked
    # (not raised to the floor), so a budgeted grade runs at 50% as the verdict says.
    from topos.training import RouteProgram

    program = RouteProgram(resolve("cifar10"), "remat")
    plan = program.plan
    assert plan.floor_bytes < plan.budget_bytes == int(0.5 * plan.unconstrained_bytes)
    assert plan.planned_bytes <= plan.budget_bytes

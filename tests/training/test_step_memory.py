"""A step's predicted memory: named parts from shapes, which add up to the prediction."""

from __future__ import annotations

import pytest

from tests.cli import tiny_workloads
from topos import SGD, Adam
from topos.training import RouteProgram, step_memory
from topos.workloads import resolve


def trained_bytes(program):
    nodes = program.network.nodes
    itemsize = program.network.dtype.itemsize
    return (
        sum(
            nodes[program.network.index(s, "test")].shape.volume
            for s in program.recording.parameters
        )
        * itemsize
    )


@pytest.mark.parametrize("route", ["engine", "recorded"])
@pytest.mark.parametrize("workload", ["tiny", "sharded"])
def test_the_parts_are_the_plans_the_gradients_the_feeds_and_the_update(workload, route):
    program = RouteProgram(getattr(tiny_workloads, workload), route)
    memory = step_memory(program, SGD(0.1))
    parts, shards = memory.parts, program.shards
    assert memory.total == sum(parts.values()) and memory.moment == "computing"
    plan = program.plan
    assert parts["arena"] == shards * plan.arena_bytes
    planned = ("arena", "backward_arena", "roots", "gradients")
    assert sum(parts[name] for name in planned) == shards * plan.predicted_training_bytes
    # Every parameter's gradient, once per shard (64-byte aligned), and the batch's feeds.
    assert parts["gradients"] >= shards * trained_bytes(program)
    rows = program.rows * shards
    side, classes = tiny_workloads.SIDE, tiny_workloads.CLASSES
    assert parts["feeds"] == rows * (side * side + classes) * 4
    assert parts["shards_mean"] == (trained_bytes(program) if shards > 1 else 0)
    assert parts["update"] == 4096 and parts["optimizer_state"] == 0
    assert (parts["backward_arena"] > 0) == (route == "engine")


def test_adam_keeps_two_moments_of_every_trained_parameter():
    program = RouteProgram(tiny_workloads.tiny, "recorded")
    sgd, adam = step_memory(program, SGD(0.1)), step_memory(program, Adam())
    assert adam.parts["optimizer_state"] == 2 * trained_bytes(program)
    assert adam.parts["update"] == 2 * sgd.parts["update"]
    assert adam.to_json()["optimizer_declared"] and adam.update_in_place


class OnlyStep:
    """An optimizer of a user's own: a functional step, nothing declared."""

    learning_rate = 0.1

    def step(self, parameters, gradients):
        return SGD(self.learning_rate).step(parameters, gradients)


@pytest.fixture
def mlp_workload(monkeypatch):
    import sys
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "examples"))
    sys.modules.pop("mlp_workload", None)
    import mlp_workload

    return mlp_workload.workload


def test_an_update_outside_the_optimizer_is_the_peak_of_a_parameter_heavy_model(mlp_workload):
    # Its parameters outweigh its activations, so a functional update is the peak.
    program = RouteProgram(mlp_workload, "recorded")
    memory = step_memory(program, OnlyStep())
    assert memory.moment == "updating" and not memory.update_in_place
    assert not memory.optimizer_declared
    largest = 784 * 256 * 4
    assert memory.parts["update"] == trained_bytes(program) + largest
    assert memory.parts["feeds"] == 0 and memory.parts["gradients"] > 0
    in_place = step_memory(program, SGD(0.1))
    assert in_place.total < memory.total


def test_describe_names_every_part_that_holds_bytes():
    program = RouteProgram(resolve("mnist"), "engine")
    line = step_memory(program, SGD(0.1)).describe()
    assert line.startswith("step memory: ") and "while computing" in line
    for name in ("arena", "backward arena", "gradients", "feeds", "update"):
        assert f"{name} " in line
    assert "optimizer state" not in line and "shards' mean" not in line

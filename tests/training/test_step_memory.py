"""A step's predicted memory: named parts from shapes, which add up to the prediction."""

from __future__ import annotations

import pytest

from tests.cli import tiny_workloads
from topos import SGD, Adam
from topos.engine.fresh_block import allocation_sizes, block_bytes
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


def pages(size):
    """An allocation of `size` bytes mapped by malloc: whole pages, header included."""
    return -(-(size + 16) // 4096) * 4096


@pytest.mark.parametrize("route", ["engine", "recorded"])
@pytest.mark.parametrize("workload", ["tiny", "sharded"])
def test_the_parts_are_the_plans_the_gradients_the_feeds_and_the_update(workload, route):
    program = RouteProgram(getattr(tiny_workloads, workload), route)
    # At a threshold of 0 every array is mapped, in pages of its own.
    memory = step_memory(program, SGD(0.1), heap_threshold=0)
    parts, shards = memory.parts, program.shards
    assert memory.total == sum(parts.values()) and memory.moment == "computing"
    plan = program.plan
    assert parts["arena"] == shards * pages(plan.arena_bytes)
    # Every parameter's gradient, once per shard (the small ones in one block a run, the
    # recorded route's loss among them), and the batch's feeds.
    network = program.network
    sizes = [network.shape(symbol).volume * 4 for symbol in program.recording.parameters]
    returned = [*sizes, 4] if route == "recorded" else sizes
    assert parts["gradients"] == shards * sum(map(pages, allocation_sizes(returned)))
    rows = program.rows * shards
    side, classes = tiny_workloads.SIDE, tiny_workloads.CLASSES
    assert parts["feeds"] == pages(rows * side * side * 4) + pages(rows * classes * 4)
    mean = sum(map(pages, allocation_sizes(sizes)))
    assert parts["shards_mean"] == (mean if shards > 1 else 0)
    assert parts["update"] == 4096 and parts["optimizer_state"] == 0
    assert (parts["backward_arena"] > 0) == (route == "engine")
    # The engine's loss is its forward plan's one root; the recorded one shares a block.
    assert parts["roots"] == (shards * pages(block_bytes([4])) if route == "engine" else 0)


def test_arrays_below_the_mmap_threshold_come_from_the_heap_the_warm_up_left():
    program = RouteProgram(tiny_workloads.tiny, "recorded")
    memory = step_memory(program, Adam(), heap_threshold=65536)
    # The tiny model's every array is small: what a step renews costs nothing, and what
    # first appears in the measured steps (the moments) grows the heap by its size.
    assert memory.parts["arena"] == memory.parts["gradients"] == memory.parts["feeds"] == 0
    assert memory.parts["optimizer_state"] >= 2 * trained_bytes(program)
    assert memory.parts["update"] == 2 * 4096  # a page of each chunk buffer touched


def test_adam_keeps_two_moments_of_every_trained_parameter():
    program = RouteProgram(tiny_workloads.tiny, "recorded")
    sgd = step_memory(program, SGD(0.1), heap_threshold=0)
    adam = step_memory(program, Adam(), heap_threshold=0)
    network = program.network
    sizes = [network.shape(symbol).volume * 4 for symbol in program.recording.parameters]
    assert adam.parts["optimizer_state"] == pages(2 * sum(sizes))  # the moments: one block
    assert sgd.parts["update"] == 4096 and adam.parts["update"] == 2 * 4096
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
    memory = step_memory(program, OnlyStep(), heap_threshold=0)
    assert memory.moment == "updating" and not memory.update_in_place
    assert not memory.optimizer_declared
    largest = 784 * 256 * 4
    network = program.network
    sizes = [network.shape(symbol).volume * 4 for symbol in program.recording.parameters]
    assert memory.parts["update"] == sum(pages(size) for size in sizes) + pages(largest)
    assert memory.parts["feeds"] == 0 and memory.parts["gradients"] > 0
    in_place = step_memory(program, SGD(0.1), heap_threshold=0)
    assert in_place.total < memory.total


def test_describe_names_every_part_that_holds_bytes():
    program = RouteProgram(resolve("mnist"), "engine")
    line = step_memory(program, SGD(0.1), heap_threshold=0).describe()
    assert line.startswith("step memory: ") and "while computing" in line
    for name in ("arena", "backward arena", "gradients", "feeds", "update"):
        assert f"{name} " in line
    assert "optimizer state" not in line and "shards' mean" not in line

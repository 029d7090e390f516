"""The engine sweep's static memory plan: the simulated calls are the real ones, backward
slots never collide, returned gradients are fresh, release frees the backward arena,
and the engine's gradients stay bit-identical to the recorded route's."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings

from benchmarks.cifar10_model import batches, build
from tests.engine.test_plan import model
from tests.support.random_graphs import Program, programs
from tests.support.routes import record
from topos.engine.arena import ALIGNMENT
from topos.engine.ownership import check_ownership
from topos.ops.primitive import REGISTRY


def routes(program: Program):
    """The program's network, adjoints, loss, recorded (forward) plan and engine plan."""
    arrays = [array.astype(np.float32) for array in program.arrays()]
    tape, loss, symbols = record(program.build, arrays, program.seed, np.float32)
    adjoints = tape.differentiate(loss, symbols)
    network = tape.into_network()
    recorded = network.entry(adjoints.roots()).lower()
    engine = network.entry([loss.symbol]).backward().lower()
    return network, adjoints, loss.symbol, recorded, engine


def bits(gradients) -> dict[int, bytes]:
    """Each parameter's gradient as bytes, by node index."""
    return {symbol.index: tensor.numpy().tobytes() for symbol, tensor in gradients.items()}


def assert_no_collisions(backward) -> None:
    """No two backward slots live at a common call share a byte, but an output that took
    over its operand's slot at the call where that operand dies (see `assert_takeovers`)."""
    assert_takeovers(backward)
    taken = {
        (id(backward.outputs[taker]), id(backward.outputs[maker]))
        for taker, maker in backward.taken_over.items()
    }
    slots = backward.slots()
    for position, slot in enumerate(slots):
        assert slot.offset % ALIGNMENT == 0
        assert slot.offset + slot.size <= backward.arena_bytes
        for other in slots[position + 1 :]:
            if (id(slot), id(other)) in taken or (id(other), id(slot)) in taken:
                continue
            if slot.start <= other.end and other.start <= slot.end:
                assert (
                    slot.offset + slot.size <= other.offset
                    or other.offset + other.size <= slot.offset
                )


def assert_takeovers(backward) -> None:
    """Every output that took over an earlier call's slot: its primitive may overwrite an
    operand that is that call's storage, of the output's shape and memory order, read by
    no later call and not returned, and the two share one slot, met at that very call."""
    simulation = backward.simulation
    calls = simulation.calls
    for taker, maker in backward.taken_over.items():
        call = calls[taker]
        storages = call.operand_storages
        overwritten = [
            storages[p]
            for p in REGISTRY[call.operation].memory.overwrites
            if storages[p] is not None
            and call.operand_shapes[p] == call.shape == calls[maker].shape
            and call.operand_layouts[p] == call.layout == calls[maker].layout
        ]
        assert overwritten
        # The maker's storage is one of them: read by no later call, and not returned.
        assert any(
            all(number not in later.reads for later in calls[taker + 1 :]) for number in overwritten
        )
        assert simulation.deaths[maker] == taker
        assert maker not in simulation.escaped and taker not in simulation.escaped
        taken, own = backward.outputs[maker], backward.outputs[taker]
        assert (taken.offset, taken.size) == (own.offset, own.size)
        assert taken.end == own.start == taker


def assert_fresh(gradients, plan, backward) -> None:
    """No returned gradient shares memory with either arena."""
    assert backward.block is not None and len(plan.arena_blocks()) == 2
    check_ownership(plan, {repr(symbol): tensor for symbol, tensor in gradients.items()})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_graphs_engine_gradients_are_the_recorded_bits(program: Program):
    network, adjoints, loss, recorded, engine = routes(program)
    parameters = network.parameters()
    expected = bits(recorded.forward(parameters).recorded_gradients(adjoints))
    backward = engine.backward_plan(network.index(loss, "test"))
    assert_no_collisions(backward)
    # Twice: the second sweep reuses the backward arena the first one wrote.
    first = engine.forward(parameters).backward(loss).parameters(parameters)
    first_bits = bits(first)
    second = engine.forward(parameters).backward(loss).parameters(parameters)
    assert first_bits == expected
    assert bits(second) == expected
    assert bits(first) == first_bits  # the first run's gradients survived the second
    assert backward.misses == 0  # every call was the simulated one
    assert_fresh(second, engine, backward)


def test_cifar10_engine_gradients_are_the_recorded_bits_and_survive_the_next_run():
    # One shard: the test runs the (single) plan by hand on the whole batch.
    engine, recorded = build("engine", batch=4, shards=1), build("recorded", batch=4, shards=1)
    assert engine.program.plans == [engine.plan]
    for images, labels in batches(2, batch=4):
        assert engine.step(images, labels).tobytes() == recorded.step(images, labels).tobytes()
    engine_arrays, recorded_arrays = engine.parameters.arrays(), recorded.parameters.arrays()
    assert engine_arrays.keys() == recorded_arrays.keys()
    for index, array in engine_arrays.items():
        assert array.tobytes() == recorded_arrays[index].tobytes()
    plan, loss = engine.plan, engine.loss
    backward = plan.backward_plan(engine.network.index(loss, "test"))
    assert backward.misses == 0
    assert_no_collisions(backward)
    assert backward.outputs and backward.workspaces  # the sweep really is planned
    # Each relu's rule multiplies the gradient into the mask it has just made, in place.
    calls = backward.simulation.calls
    masks = [p for p, call in enumerate(calls) if call.operation == "heaviside"]
    in_place = {backward.taken_over.get(p + 1) for p in masks if calls[p + 1].operation == "mul"}
    assert len(masks) == 3 and len(in_place & set(masks)) >= 2
    # The images' gradient's products: scratch live during its own call only.
    assert backward.scratches
    assert all(slot.start == slot.end for slot in backward.scratches.values())
    images, labels = batches(1, batch=4, seed=3)[0]
    engine.step(images, labels)
    feeds = {engine.images: recorded_feed(images), engine.targets: label_feed(labels)}
    first = plan.forward(engine.parameters, feeds).backward(loss).parameters(engine.parameters)
    saved = bits(first)
    other = {engine.images: recorded_feed(-images), engine.targets: label_feed(labels[::-1])}
    second = plan.forward(engine.parameters, other).backward(loss).parameters(engine.parameters)
    assert bits(first) == saved
    assert bits(second) != saved
    assert_fresh(first, plan, backward)


def recorded_feed(images: np.ndarray):
    from topos import Tensor

    return Tensor.adopt(np.ascontiguousarray(images, dtype=np.float32))


def label_feed(labels: np.ndarray):
    from benchmarks.cifar10_model import CLASSES
    from topos import Tensor

    return Tensor.selection(labels, CLASSES)


def test_the_prediction_covers_the_simulated_peak():
    network, _, loss = model()
    plan = network.entry([loss]).backward().lower()
    backward = plan.backward_plan(network.index(loss, "test"))
    assert backward.predicted_bytes >= backward.simulation.peak
    assert plan.backward_peak_bytes(network.index(loss, "test")) == backward.predicted_bytes
    assert plan.predicted_training_bytes == (
        plan.arena_bytes + plan.root_bytes + backward.predicted_bytes
    )


def test_release_frees_the_backward_arena_and_the_next_sweep_computes_the_same_bits():
    network, _, loss = model()
    plan = network.entry([loss]).backward().lower()
    parameters = network.parameters()
    expected = bits(plan.forward(parameters, defaults=True).backward(loss).parameters(parameters))
    backward = plan.backward_plan(network.index(loss, "test"))
    block = backward.block
    assert block is not None
    plan.release()
    assert backward.block is None
    again = plan.forward(parameters, defaults=True).backward(loss).parameters(parameters)
    assert bits(again) == expected
    assert backward.block is not None and backward.block is not block

"""The static memory plan: arena slots never collide, views keep their bases alive,
roots are fresh per run, stale reads are refused, an output takes over only the slot
of an operand nothing reads after it, and the bits do not change."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings

from tests.engine.test_plan import model
from tests.support.random_graphs import Program, programs
from tests.support.routes import record
from topos import GraphError, Tape, Tensor
from topos.engine.arena import ALIGNMENT, Interval, place
from topos.ops.patch_window import PatchWindow
from topos.training import RouteProgram
from topos.workloads import resolve


def lowered(program: Program, dtype=np.float32):
    """The program's network, its recorded-route (forward) plan and its engine (retain) plan."""
    arrays = [array.astype(dtype) for array in program.arrays()]
    tape, loss, symbols = record(program.build, arrays, program.seed, dtype)
    adjoints = tape.differentiate(loss, symbols)
    network = tape.into_network()
    forward = network.entry(adjoints.roots()).lower()
    retain = network.entry([loss.symbol]).backward().lower()
    return network, forward, retain


def arena_intervals(plan) -> list[tuple[int, int, int, int]]:
    """(first step, last step, first byte, end byte) of every slot of the plan's arena: an
    output that took over its operand's slot extends that slot's span, in the same bytes."""
    memory = plan.memory
    first: dict[int, int] = {}
    for index, operand in memory.taken_over.items():
        first[index] = first.get(operand, operand)
    ends = {index: memory.storage_end[index] for index in memory.slots if index not in first}
    for index, owner in first.items():
        assert memory.slots[index].offset == memory.slots[owner].offset
        assert memory.slots[index].size == memory.slots[owner].size
        ends[owner] = max(ends[owner], memory.storage_end[index])
    spans = []
    for index, slot in memory.slots.items():
        if index not in first:
            spans.append((index, ends[index], slot.offset, slot.offset + slot.size))
    for index, slot in memory.workspaces.items():
        node = plan.network.nodes[index]
        # A workspace holding the output lives as long as the output; a computed root's
        # kernel copies its output out of the workspace into the root's fresh buffer, so
        # that workspace is its step's alone.
        holds_output = node.primitive.memory.output_in_workspace and index not in memory.fresh
        end = memory.storage_end[index] if holds_output else index
        spans.append((index, end, slot.offset, slot.offset + slot.size))
    for index, slot in memory.scratches.items():
        # A scratch beside an output-holding workspace lives during its step only.
        spans.append((index, index, slot.offset, slot.offset + slot.size))
    return spans


def assert_no_collisions(plan) -> None:
    spans = arena_intervals(plan)
    for position, (start, end, low, high) in enumerate(spans):
        assert low % ALIGNMENT == 0
        assert high <= plan.arena_bytes
        for other_start, other_end, other_low, other_high in spans[position + 1 :]:
            if start <= other_end and other_start <= end:
                assert high <= other_low or other_high <= low, (start, end, other_start)


def reference_payloads(network, plan) -> dict[int, np.ndarray]:
    """Every evaluated node computed by its kernel alone: no arena, no `out`."""
    values = {}
    parameters = network.parameters().arrays()
    for index in plan.evaluated:
        node = network.nodes[index]
        if node.operation == "parameter":
            values[index] = parameters[index]
        elif node.is_source:
            values[index] = network.payloads[index].numpy()
        else:
            operands = [values[i] for i in node.inputs]
            if node.shape.rank == 0:
                # A rank-0 result into an array of its own, as the plan always gives
                # one: without `out`, a kernel's ufuncs would answer a NumPy scalar.
                out = np.empty((), dtype=network.dtype)
                node.primitive.kernel(*operands, out=out, **node.attributes)
                values[index] = out
            else:
                values[index] = node.primitive.kernel(*operands, **node.attributes)
    return values


#: A col2im (its output in its workspace) that is a computed root: its kernel copies the
#: output into the root's fresh buffer, so its workspace is free after its step and a
#: later node may take the same bytes (the search found it; the plan was right).
_FRESH_COL2IM = Program(
    shapes=((1, 1, 1, 1), (1, 1, 1, 1)),
    steps=(
        ("abs", (0,), {}),
        ("im2col", (1,), {"window": PatchWindow(1, 1, 1, 0, 1)}),
        *[("abs", (0,), {})] * 5,
        ("expand", (3,), {"shape": (-1, -1)}),
    ),
    terms=(None, 2),
    seed=0,
    leaves=(),
    second_order=False,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
@example(_FRESH_COL2IM)
def test_random_graphs_slots_never_collide_and_the_bits_match_the_kernels(program: Program):
    network, forward, retain = lowered(program)
    for plan in (forward, retain):
        assert_no_collisions(plan)
        reference = reference_payloads(network, plan)
        run = plan.forward(network.parameters(), defaults=True)
        # Twice: the second run reuses the arena the first one wrote.
        run = plan.forward(network.parameters(), defaults=True)
        readable = plan.roots if plan.posture == "forward" else plan.evaluated
        for index in readable:
            payload = run.of(network.symbol(index)).numpy()
            assert np.array_equal(payload, np.asarray(reference[index]), equal_nan=True), index
        assert_takeovers_are_safe(network, plan)


def assert_takeovers_are_safe(network, plan) -> None:
    """Every output that took over an operand's slot: its primitive may overwrite that
    operand, which owns its slot, has the output's shape and memory order, and is read by
    nothing after this step (nor is any view of it); only the forward posture does it."""
    memory = plan.memory
    if plan.posture != "forward":
        assert memory.taken_over == {}
    last = {}
    for index in plan.evaluated:
        for input_index in network.nodes[index].inputs:
            last[input_index] = index
    for index, operand in memory.taken_over.items():
        node, taken = network.nodes[index], network.nodes[operand]
        assert operand in [node.inputs[p] for p in node.primitive.memory.overwrites]
        assert memory.storage[operand] == operand and operand in memory.slots
        assert taken.shape == node.shape and memory.layouts[operand] == memory.layouts[index]
        readers = [v for v in plan.evaluated if memory.storage.get(v) == operand]
        assert all(last.get(reader, reader) <= index for reader in readers)
        assert index not in memory.fresh and index not in memory.views


def test_place_aligns_and_shares_only_disjoint_lifetimes():
    intervals = [Interval("a", 0, 2, 100), Interval("b", 3, 5, 100), Interval("c", 1, 4, 10)]
    offsets, size = place(intervals)
    assert all(offset % ALIGNMENT == 0 for offset in offsets.values())
    assert offsets["a"] == offsets["b"]  # never live together: the same bytes
    assert offsets["c"] >= 128  # live beside both: past them
    assert size == 192


def test_a_sum_takes_over_the_slot_of_an_operand_it_reads_last():
    tape = Tape()
    x = tape.input(Tensor([4], [0.1, 0.2, 0.3, 0.4]))
    w = tape.parameter(Tensor([4], [1.0, -1.0, 2.0, 0.5]))
    a = x * w  # both operands are sources: a gets a slot of its own
    b = a.exp()
    c = b + a  # the last read of both: c is written over b, the first
    t = c.tanh()  # no arithmetic that may overwrite
    d = c * t  # c is read again by e: d is written over t
    e = c + d  # the last read of c: e is written over c, and so over b
    loss = e.sum()
    network = tape.into_network()
    plan = network.entry([loss.symbol]).lower()
    memory = plan.memory
    assert memory.taken_over == {c.index: b.index, d.index: t.index, e.index: c.index}
    assert memory.slots[e.index].offset == memory.slots[b.index].offset
    assert memory.slots[d.index].offset == memory.slots[t.index].offset
    assert_takeovers_are_safe(network, plan)
    reference = reference_payloads(network, plan)
    run = plan.forward(network.parameters(), defaults=True)
    assert run.of(loss.symbol).numpy().tobytes() == np.asarray(reference[loss.index]).tobytes()
    # The retain posture keeps every buffer, so nothing is taken over.
    assert network.entry([loss.symbol]).backward().lower().memory.taken_over == {}


def test_the_cifar10_bias_sums_are_added_to_the_pooled_rows():
    # conv2d_max_pool adds the bias after pooling; the first stage's pooled rows (its
    # lanes phase-major, lane_max's output is already [rows, F]) are the sum's own
    # operand, so the sum takes over their slot.
    program = RouteProgram(resolve("cifar10"), "recorded")
    nodes, memory = program.network.nodes, program.plan.memory
    pooled = [index for index, node in enumerate(nodes) if node.operation == "lane_max"]
    assert len(pooled) == 3
    sums = []
    for index in pooled:
        readers = [i for i, node in enumerate(nodes) if index in node.inputs]
        if nodes[readers[0]].operation == "reshape":
            readers = [i for i, node in enumerate(nodes) if readers[0] in node.inputs]
        sums += [i for i in readers if nodes[i].operation == "add"]
    assert len(sums) == 3
    assert memory.taken_over.get(sums[0]) == pooled[0]
    assert not any(
        nodes[operand].operation == "convolution" for operand in memory.taken_over.values()
    )
    assert_takeovers_are_safe(program.network, program.plan)


def test_views_cost_nothing_and_keep_their_bases_alive():
    network, adjoints, _ = model()
    plan = network.entry(adjoints.roots()).lower()
    memory = plan.memory
    assert memory.views
    last = {}
    for index in plan.evaluated:
        for input_index in network.nodes[index].inputs:
            last[input_index] = index
    for view in memory.views:
        assert view not in memory.slots
        base = memory.storage[view]
        assert base not in memory.views
        assert memory.storage_end[base] >= last.get(view, view)


def test_the_retain_arena_is_every_retained_buffer():
    network, _, loss = model()
    plan = network.entry([loss]).backward().lower()
    memory = plan.memory
    spans = sorted((slot.offset, slot.offset + slot.size) for slot in memory.slots.values())
    for (_, end), (start, _) in pairwise(spans):
        assert end <= start  # no retained buffer shares bytes with another
    computed = [
        i
        for i in plan.evaluated
        if not network.nodes[i].is_source and i not in memory.views and i not in memory.fresh
    ]
    assert set(memory.slots) | set(memory.workspaces) >= set(computed)
    assert plan.arena_bytes >= sum(slot.size for slot in memory.slots.values())


def test_roots_are_fresh_per_run():
    network, adjoints, loss = model()
    plan = network.entry(adjoints.roots()).lower()
    parameters = network.parameters()
    first = plan.forward(parameters, defaults=True)
    loss_before = first.of(loss)
    gradients_before = first.recorded_gradients(adjoints)
    kept = {index: np.array(tensor.numpy()) for index, tensor in gradients_before.items()}
    saved_loss = np.array(loss_before.numpy())
    images = network.input_symbols()[0]
    shape = network.shape(images)
    other = Tensor(shape, np.linspace(2, -3, shape.volume), np.float32)
    plan.forward(parameters, {images: other}, defaults=True)
    assert np.array_equal(loss_before.numpy(), saved_loss)
    for index, tensor in gradients_before.items():
        assert np.array_equal(tensor.numpy(), kept[index])


def test_stale_reads_of_arena_buffers_are_refused():
    network, _, loss = model()
    plan = network.entry([loss]).backward().lower()
    parameters = network.parameters()
    first = plan.forward(parameters, defaults=True)
    inner = next(
        i for i in plan.evaluated if i in plan.memory.slots and network.nodes[i].shape.volume > 1
    )
    # Read while fresh, a non-root is a copy: the next run cannot change it.
    copy = first.of(network.symbol(inner))
    saved = np.array(copy.numpy())
    loss_value = first.of(loss)
    second = plan.forward(
        parameters,
        {network.input_symbols()[0]: Tensor.filled(network.shape(network.input_symbols()[0]), 0.5)},
        defaults=True,
    )
    assert np.array_equal(copy.numpy(), saved)
    assert first.of(loss) is not None and loss_value.shape == network.shape(loss)
    with pytest.raises(GraphError, match="overwritten"):
        first.of(network.symbol(inner))
    with pytest.raises(GraphError, match="overwritten"):
        first.backward(loss)
    second.backward(loss)  # the latest run is fine


def test_release_frees_the_arena_and_the_next_forward_computes_the_same_bits():
    network, _, loss = model()
    plan = network.entry([loss]).backward().lower()
    parameters = network.parameters()

    def gradient_bits(run):
        gradients = run.backward(loss).parameters(parameters)
        return {symbol: tensor.numpy().tobytes() for symbol, tensor in gradients.items()}

    first = plan.forward(parameters, defaults=True)
    expected = gradient_bits(first)
    arena = plan._arena
    plan.release()
    assert plan._arena is None
    second = plan.forward(parameters, defaults=True)
    assert plan._arena is not None and plan._arena is not arena
    assert gradient_bits(second) == expected
    with pytest.raises(GraphError, match="overwritten"):
        first.backward(loss)


def test_the_images_gradients_scratch_is_freed_after_its_step(monkeypatch):
    # convolution_images' output lives in its accumulator (its workspace) as long as the
    # output does; its products are scratch, live during its own step only, so later
    # buffers take their bytes and the arena is smaller than were they held as long.
    from tests.engine.test_remat_plan import convnet
    from topos.ops import REGISTRY

    network, adjoints, feeds = convnet()
    entry = network.entry(adjoints.roots())
    plan = entry.lower()
    memory = plan.memory
    images = [i for i in plan.evaluated if network.nodes[i].operation == "convolution_images"]
    assert images and set(images) <= set(memory.scratches)
    assert_no_collisions(plan)
    spans = arena_intervals(plan)
    for index in images:
        assert memory.storage_end[index] > index
        scratch = memory.scratches[index]
        low, high = scratch.offset, scratch.offset + scratch.size
        assert any(
            start > index and low < other_high and other_low < high
            for start, _, other_low, other_high in spans
        )
    primitive = REGISTRY["convolution_images"]
    held, scratch_rule = primitive.memory.workspace, primitive.memory.scratch
    with monkeypatch.context() as patched:
        # The whole workspace held as long as the output, as before the split.
        whole_workspace = replace(
            primitive.memory,
            scratch=None,
            workspace=lambda *a, **k: held(*a, **k) + scratch_rule(*a, **k),
        )
        patched.setattr(primitive, "memory", whole_workspace)
        whole = entry.lower()
        assert not whole.memory.scratches
        # One tap's slab is small beside the accumulator: holding it longer costs this
        # graph no arena bytes, but never saves any.
        assert whole.arena_bytes >= plan.arena_bytes
        run = whole.forward(network.parameters(), feeds)
        before = [run.of(network.symbol(root)).numpy().tobytes() for root in whole.roots]
    run = plan.forward(network.parameters(), feeds)
    assert [run.of(network.symbol(root)).numpy().tobytes() for root in plan.roots] == before

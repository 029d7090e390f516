"""A plan's steps compiled into one function: no Python of its own per node (issue 47).

On a GRU a user writes (small matrices, a thousand nodes) the plan's per-node Python
(the step loop's bookkeeping, an elementwise kernel's choice of loops) cost as much as
the kernels. The compiled run calls every kernel in order from one straight-line
function, and an elementwise node of small operands calls its ufunc directly: what it
computes stays the loop's, bit for bit, on every posture.
"""

from __future__ import annotations

import sys
from types import FunctionType

import numpy as np
import pytest

from tests.support.user_models import gru_workload, resnet_workload
from topos import Tape


def _gru():
    dataset = gru_workload.load_dataset(None)
    tape = Tape()
    recording = gru_workload.record(tape, 8)
    adjoints = tape.differentiate(recording.loss, recording.parameters)
    network = tape.into_network()
    order = gru_workload.batches(dataset.train, 8, gru_workload.shuffle_state)
    feeds = gru_workload.feeds(dataset.train, order.indices(0), recording)
    return network, adjoints, feeds, recording


def _python_calls(run) -> int:
    """How many Python functions `run()` calls (C functions, such as ufuncs, not counted)."""
    calls = 0

    def count(frame, event, argument):
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(count)
    try:
        run()
    finally:
        sys.setprofile(None)
    return calls


def test_a_gru_step_calls_under_one_python_function_a_node():
    network, adjoints, feeds, _ = _gru()
    plan = network.entry(adjoints.roots()).lower()
    parameters = network.parameters()
    plan.forward(parameters, feeds)  # binds the arena, compiles the run
    calls = _python_calls(lambda: plan.forward(parameters, feeds))
    # Before: the step loop called each elementwise kernel through its wrapper, its loop
    # regrouping check and a row test (3-4 frames a node, about 3,000 on this GRU).
    assert calls < len(plan.evaluated), (calls, len(plan.evaluated))


def _resnet():
    tape = Tape()
    recording = resnet_workload.record(tape, 4)
    adjoints = tape.differentiate(recording.loss, recording.parameters)
    network = tape.into_network()
    rng = np.random.default_rng(5)
    images = rng.standard_normal((4, 3, 8, 8)).astype(np.float32)
    feeds = {recording.inputs["images"]: images}
    return network, adjoints, feeds, recording


def _same_runs(network, plans, feeds, defaults=False):
    parameters = network.parameters()
    for plan in plans:
        # An observer makes the plan walk its steps one by one, as before compiling.
        looped = plan.forward(parameters, feeds, lambda node, live: None, defaults=defaults)
        expected = {i: np.array(looped._buffers[i]) for i in plan.roots}
        held = [buffer is None for buffer in looped._buffers]
        compiled = plan.forward(parameters, feeds, defaults=defaults)
        assert [buffer is None for buffer in compiled._buffers] == held
        for index, array in expected.items():
            assert compiled._buffers[index].tobytes() == array.tobytes()


def test_the_compiled_run_is_the_loops_bit_for_bit_on_a_gru():
    network, adjoints, feeds, recording = _gru()
    plans = [
        network.entry(adjoints.roots()).lower(),
        network.entry([recording.loss]).backward().lower(),
    ]
    _same_runs(network, plans, feeds)


def test_the_compiled_run_is_the_loops_bit_for_bit_on_every_posture_of_a_resnet():
    network, adjoints, feeds, recording = _resnet()
    remat = network.entry(adjoints.roots()).lower("floor")
    assert remat.recomputations > 0  # a schedule of its own, not the recorded one
    plans = [
        network.entry(adjoints.roots()).lower(),
        network.entry([recording.loss]).backward().lower(),
        remat,
    ]
    _same_runs(network, plans, feeds, defaults=True)


@pytest.mark.parametrize("part_steps", [7, 64])
def test_a_run_compiled_in_parts_is_the_loops_bit_for_bit(monkeypatch, part_steps):
    # Past PART_STEPS steps the run is several functions, buffers handed from one to the
    # next through the run's list: every posture's buffers (all of them, retained) and
    # which ones a run leaves None are the loop's, and a replica's parts are its own.
    from topos.engine import compiled_steps

    monkeypatch.setattr(compiled_steps, "PART_STEPS", part_steps)
    network, adjoints, feeds, recording = _resnet()
    plans = [
        network.entry(adjoints.roots()).lower(),
        network.entry([recording.loss]).backward().lower(),
        network.entry(adjoints.roots()).lower("floor"),
    ]
    parameters = network.parameters()
    for plan in plans:
        parts = [name for name in plan._compiled._namespace if name.startswith("part")]
        assert len(parts) == -(-len(plan._compiled.structure) // part_steps) > 1
        looped = plan.forward(parameters, feeds, lambda node, live: None, defaults=True)
        expected = [None if b is None else np.array(b).tobytes() for b in looped._buffers]
        for run in (
            plan.forward(parameters, feeds, defaults=True),
            plan.replica().forward(parameters, feeds, defaults=True),
        ):
            found = [None if b is None else np.asarray(b).tobytes() for b in run._buffers]
            held = [position for position, b in enumerate(expected) if b is not None]
            assert [b is None for b in found] == [b is None for b in expected]
            if plan.posture == "retain":
                assert [found[i] for i in held] == [expected[i] for i in held]
            else:
                assert [found[i] for i in plan.roots] == [expected[i] for i in plan.roots]


def test_a_tool_that_wraps_the_kernels_is_heard():
    # Measurement tools (benchmarks/profile_step.py) replace the step list with wrapped
    # kernels; the compiled run must call those, not the ones it was compiled with.
    network, adjoints, feeds, _ = _gru()
    plan = network.entry(adjoints.roots()).lower()
    parameters = network.parameters()
    plan.forward(parameters, feeds)
    called = []

    def wrapped(kernel, position):
        def call(*operands, **attributes):
            called.append(position)
            return kernel(*operands, **attributes)

        return call

    plan._steps = [(p, wrapped(k, p), *rest) for p, k, *rest in plan._steps]
    plan.forward(parameters, feeds)
    assert called == [p for p, *_ in plan._steps]


def test_the_run_function_is_compiled_while_lowering_never_in_a_step(monkeypatch):
    # Compiling in a step's bind left start-up's free heap chunks (touched, resident)
    # where the measured steps' arrays landed: a shard process's training delta read
    # 575 KiB under its prediction. So the plan compiles once, as it is lowered; a run,
    # a release and the run after it, and a replica's first run compile nothing.
    from topos.engine import compiled_steps

    network, adjoints, feeds, _ = _gru()
    plan = network.entry(adjoints.roots()).lower()
    compiled = []
    original = compiled_steps._compile

    def counting(*arguments):
        compiled.append(arguments)
        return original(*arguments)

    monkeypatch.setattr(compiled_steps, "_compile", counting)
    parameters = network.parameters()
    loss_bits = [plan.forward(parameters, feeds)._buffers[i].tobytes() for i in plan.roots]
    plan.release()
    again = plan.forward(parameters, feeds)
    assert [again._buffers[i].tobytes() for i in plan.roots] == loss_bits
    twin = plan.replica()
    copied = twin.forward(parameters, feeds)
    assert [copied._buffers[i].tobytes() for i in plan.roots] == loss_bits
    assert compiled == []


def test_a_bound_kernels_keywords_are_written_at_its_call_site():
    # A kernel bound to its slot and attributes is a partial with keywords, which merges
    # them into a new dictionary on every call (a sixth of a GRU step): the compiled run
    # calls the partial's function with the keywords at the call site instead.
    from functools import partial

    network, adjoints, feeds, _ = _gru()
    plan = network.entry(adjoints.roots()).lower()
    parameters = network.parameters()
    plan.forward(parameters, feeds)
    assert sum(isinstance(kernel, partial) for _, kernel, *_ in plan._steps) > 900
    bound = plan._compiled._namespace.values()
    assert not [value for value in bound if isinstance(value, partial)]
    functions = [value for value in bound if isinstance(value, FunctionType)]
    assert any(name.endswith("_out") for f in functions for name in f.__code__.co_names)


def test_a_release_drops_every_arena_view_the_compiled_run_held():
    # The keywords' values include the slots (views of the arena): a release must drop
    # them with the kernels, or the arena it frees stays alive.
    network, adjoints, feeds, _ = _gru()
    plan = network.entry(adjoints.roots()).lower()
    parameters = network.parameters()
    before = plan.forward(parameters, feeds)
    expected = [before._buffers[i].tobytes() for i in plan.roots]
    plan.release()
    held = [value for value in plan._compiled._namespace.values() if isinstance(value, np.ndarray)]
    assert held == []
    again = plan.forward(parameters, feeds)
    assert [again._buffers[i].tobytes() for i in plan.roots] == expected


def test_every_posture_foretells_its_kernels_keywords(monkeypatch):
    # The run function is compiled at lowering with the keywords `_bind` will bind each
    # kernel with (attributes, workspace, scratch, slot), foretold from the memory plan:
    # on a retain, a forward and a remat plan, binding compiles nothing again.
    from topos.engine import compiled_steps

    network, adjoints, feeds, recording = _resnet()
    plans = [
        network.entry(adjoints.roots()).lower(),
        network.entry([recording.loss]).backward().lower(),
        network.entry(adjoints.roots()).lower("floor"),
    ]
    compiled = []
    original = compiled_steps._compile
    monkeypatch.setattr(
        compiled_steps, "_compile", lambda *arguments: compiled.append(1) or original(*arguments)
    )
    for plan in plans:
        plan.forward(network.parameters(), feeds, defaults=True)
        assert any(structure[4] for structure in plan._compiled.structure)
    assert compiled == []


def _bound_view(plan):
    """(the step number of a bound view, its operand's step number), from a bound plan."""
    structure = plan._compiled.structure
    number_of = {step[0]: number for number, step in enumerate(structure)}
    for number, step in enumerate(structure):
        operand = number_of.get(step[1][0]) if step[1] else None
        if step[5] and operand is not None and "out" in structure[operand][4]:
            return number, operand
    raise AssertionError("no bound view of a slot")


def test_a_view_of_a_slot_is_made_once_and_read_back_every_run():
    # A reshape, narrow or permute of a computed node's slot is the same view every run:
    # made when the kernels are bound, not by the view's kernel in each run.
    network, _, feeds, recording = _resnet()
    plan = network.entry([recording.loss]).backward().lower()  # retain: every buffer held
    parameters = network.parameters()
    first = plan.forward(parameters, feeds, defaults=True)
    number, _ = _bound_view(plan)
    position = plan._compiled.structure[number][0]
    second = plan.forward(parameters, feeds, defaults=True)
    assert first._buffers[position] is second._buffers[position]
    bound = sum(step[5] for step in plan._compiled.structure)
    assert bound > 1, bound


def test_a_bound_view_is_made_again_when_its_operand_is_another_array():
    # The view is read back only when its operand is the very slot it was made of: an
    # operand kernel answering another array (its own copy) gets the view's kernel called.
    network, adjoints, feeds, _ = _gru()
    plan = network.entry(adjoints.roots()).lower()
    parameters = network.parameters()
    expected = [plan.forward(parameters, feeds)._buffers[i].tobytes() for i in plan.roots]
    number, operand = _bound_view(plan)
    namespace = plan._compiled._namespace
    kernel, view_kernel, views_made = namespace[f"k{operand}"], namespace[f"k{number}"], []

    def copying(*operands, **keywords):
        return np.array(kernel(*operands, **keywords))

    def counted(*operands, **keywords):
        views_made.append(1)
        return view_kernel(*operands, **keywords)

    namespace[f"k{operand}"], namespace[f"k{number}"] = copying, counted
    again = plan.forward(parameters, feeds)
    assert views_made == [1]
    assert [again._buffers[i].tobytes() for i in plan.roots] == expected


def test_a_kernel_that_copies_is_never_bound_as_a_view():
    from topos.engine.compiled_steps import _view_once

    slot = np.zeros((4, 3), np.float32)
    guard, view = _view_once(lambda operand: np.ascontiguousarray(operand.T), slot)
    assert view is None and guard is not slot
    guard, view = _view_once(lambda operand: operand.reshape(12), slot)
    assert guard is slot and np.shares_memory(view, slot)

"""Gradients through narrows, as a user's recurrent cell cuts its gates out of one product:
slices that tile an axis are joined by concatenation (no zero-filled buffer a slice,
no addition a slice), any other slices padded and added as before, and every case is
right against finite differences and the same bits on both routes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.autodiff.test_route_parity import assert_bitwise_equal
from tests.support.routes import engine, finite_differences, record, recorded
from topos.autodiff.eager_algebra import EagerAlgebra
from topos.autodiff.slice_gradients import SliceGradients


def _gated_cell(tape, tensors):
    """A user's LSTM cell: one product, four gates cut out of it, the state updated."""
    inputs, weights, memory = tensors
    x = tape.leaf(inputs)
    w = tape.parameter(weights, "weights")
    c = tape.parameter(memory, "memory")
    gates = x @ w
    width = gates.shape[1] // 4
    entry, forget, candidate, exit_gate = (gates.narrow(1, k * width, width) for k in range(4))
    memory_next = forget.sigmoid() * c + entry.sigmoid() * candidate.tanh()
    return exit_gate.sigmoid() * memory_next.tanh(), [w.symbol, c.symbol]


def _overlapping_and_gapped(tape, tensors):
    """Windows that overlap, one that leaves a gap, and the operand also read whole in
    between: nothing here tiles."""
    inputs, weights = tensors
    x = tape.leaf(inputs)
    w = tape.parameter(weights, "weights")
    product = (x @ w).tanh()
    first = product.narrow(1, 0, 5)
    second = product.narrow(1, 3, 5)
    whole = product.sum(axis=1, keepdims=True)
    last = product.narrow(1, 6, 2)
    joined = first.sum(axis=1, keepdims=True) * second.sum(axis=1, keepdims=True)
    return joined + whole * last.sum(axis=1, keepdims=True), [w.symbol]


def _parameter_cut_two_ways(tape, tensors):
    """A parameter cut along its rows and along its columns, and its columns tiled."""
    inputs, weights = tensors
    x = tape.leaf(inputs)
    w = tape.parameter(weights, "weights")
    left = x @ w.narrow(1, 0, 3)
    right = x @ w.narrow(1, 3, 5)
    top = w.narrow(0, 0, 2).sum(axis=0, keepdims=True).narrow(1, 3, 5)
    return (left.sum(axis=1, keepdims=True) * right) + top, [w.symbol]


def _arrays(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) * 0.5 for shape in shapes]


CASES = {
    "gated cell": (_gated_cell, _arrays(1, (4, 3), (3, 8), (4, 2))),
    "overlapping and gapped": (_overlapping_and_gapped, _arrays(2, (4, 3), (3, 8))),
    "a parameter cut two ways": (_parameter_cut_two_ways, _arrays(3, (4, 3), (3, 8))),
}


@pytest.mark.parametrize("case", CASES)
def test_gradients_through_slices_are_right_and_the_routes_bit_identical(case):
    build, arrays = CASES[case]
    assert_bitwise_equal(
        engine(build, arrays, 7, np.float32), recorded(build, arrays, 7, np.float32)
    )
    exact = recorded(build, arrays, 7, np.float64)
    assert_bitwise_equal(engine(build, arrays, 7, np.float64), exact, np.float64)
    for gradient, estimate in zip(exact.gradients, finite_differences(build, arrays, 7)):
        np.testing.assert_allclose(gradient, estimate, rtol=1e-6, atol=1e-8)


def _recorded_operations(build, arrays):
    tape, loss, symbols = record(build, arrays, 7, np.float32)
    before = len(tape.nodes)
    tape.differentiate(loss, symbols)
    return [node.operation for node in tape.nodes[before:]]


def test_gates_that_tile_their_product_are_joined_without_padding():
    operations = _recorded_operations(*CASES["gated cell"])
    # Four gates: three concatenations, no zero-filled slice, no sum of slices.
    assert "pad" not in operations
    assert operations.count("concat") == 3


def test_slices_that_do_not_tile_are_padded_as_before():
    operations = _recorded_operations(*CASES["overlapping and gapped"])
    assert operations.count("pad") == 3 and "concat" not in operations


def _pad(part, start, size):
    padded = np.zeros((part.shape[0], size), part.dtype)
    padded[:, start : start + part.shape[1]] = part
    return padded


@pytest.mark.parametrize(
    "starts, lengths, tiles",
    [
        ((4, 0, 2), (4, 2, 2), True),  # arrived out of order, tile once sorted
        ((0, 3), (5, 5), False),  # overlap
        ((0, 5), (2, 3), False),  # a gap
        ((0,), (8,), True),  # one slice, the whole axis
    ],
)
def test_held_slices_assemble_to_the_padded_sum_in_arrival_order(starts, lengths, tiles):
    rng = np.random.default_rng(11)
    slices = [
        (start, rng.standard_normal((3, length)).astype(np.float32))
        for start, length in zip(starts, lengths)
    ]
    held = SliceGradients(axis=1, size=8, rank=2, slices=list(slices))
    assembled = held.assemble(EagerAlgebra(np.float32))
    expected = _pad(slices[0][1], slices[0][0], 8)
    for start, part in slices[1:]:
        expected = expected + _pad(part, start, 8)
    assert assembled.tobytes() == expected.tobytes()
    if tiles:
        ordered = [part for _, part in sorted(slices, key=lambda pair: pair[0])]
        assert assembled.tobytes() == np.concatenate(ordered, axis=1).tobytes()


def test_a_negative_zero_keeps_its_sign_in_a_tiled_gradient():
    # The one difference from padding and adding: -0.0 + 0.0 is +0.0.
    slices = [(0, np.array([[-0.0]], np.float32)), (1, np.array([[1.0]], np.float32))]
    held = SliceGradients(axis=1, size=2, rank=2, slices=slices)
    assert np.signbit(held.assemble(EagerAlgebra(np.float32))[0, 0])

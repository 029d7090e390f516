"""The two gradient routes agree bit for bit: per primitive and composite, on ties,
on reuse, on unused parameters, on rank-0 operands, and on random graphs.

Parity alone would pass for two equally wrong routes, so ties are checked against
hand-computed expectations, and random graphs also against finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from numpy.lib.stride_tricks import sliding_window_view

from tests.support.cases import ALL_CASES, Case
from tests.support.random_graphs import Program, programs
from tests.support.routes import (
    Outcome,
    engine,
    finite_differences,
    record,
    recorded,
    weighting,
)
from topos import Tape, max_pool


def assert_bitwise_equal(first: Outcome, second: Outcome, dtype=np.float32) -> None:
    assert first.loss.dtype == second.loss.dtype == dtype
    assert first.loss.tobytes() == second.loss.tobytes(), (first.loss, second.loss)
    assert len(first.gradients) == len(second.gradients)
    for position, (left, right) in enumerate(zip(first.gradients, second.gradients)):
        assert left.dtype == right.dtype == dtype, f"gradient {position}"
        assert left.shape == right.shape, f"gradient {position}"
        assert left.tobytes() == right.tobytes(), f"gradient {position}: {left} != {right}"


def both_routes(build, arrays, seed, dtype=np.float32) -> tuple[Outcome, Outcome]:
    first = engine(build, arrays, seed, dtype)
    second = recorded(build, arrays, seed, dtype)
    assert_bitwise_equal(first, second, dtype)
    return first, second


@pytest.mark.parametrize("case", ALL_CASES, ids=repr)
def test_routes_agree_bitwise(case: Case):
    both_routes(case.build, case.arrays(), case.seed)


def parameters_of(express):
    def build(tape: Tape, tensors):
        values = [tape.parameter(tensor) for tensor in tensors]
        return express(tape, *values), [value.symbol for value in values]

    return build


def test_maximum_tie_sends_the_gradient_left():
    left = np.array([[1, 2, 3], [0, -1, 5]], dtype=np.float32)
    right = np.array([[1, 0, 3], [0, 4, 5]], dtype=np.float32)
    build = parameters_of(lambda tape, a, b: a.maximum(b))
    outcome, _ = both_routes(build, [left, right], seed=7)
    weights = weighting(left.shape, 7).astype(np.float32)
    np.testing.assert_array_equal(outcome.gradients[0], np.where(left >= right, weights, 0))
    np.testing.assert_array_equal(outcome.gradients[1], np.where(right > left, weights, 0))
    assert np.count_nonzero(left == right) == 4  # the case really has ties


def test_maximum_tie_with_a_rank0_operand():
    values = np.array([2, 3, 2, 1], dtype=np.float32)
    scalar = np.array(2, dtype=np.float32)
    build = parameters_of(lambda tape, a, s: a.maximum(s))
    outcome, _ = both_routes(build, [values, scalar], seed=8)
    weights = weighting(values.shape, 8).astype(np.float32)
    np.testing.assert_array_equal(outcome.gradients[0], np.where(values >= 2, weights, 0))
    expected_scalar = np.float32(weights[values < 2].sum())
    assert outcome.gradients[1].shape == ()
    np.testing.assert_array_equal(outcome.gradients[1], expected_scalar)


def test_abs_sends_the_sign_and_nothing_at_zero():
    values = np.array([[-2, 0, 3], [0.5, -0.0, -1]], dtype=np.float32)
    outcome, _ = both_routes(parameters_of(lambda tape, a: a.abs()), [values], seed=9)
    weights = weighting(values.shape, 9).astype(np.float32)
    np.testing.assert_array_equal(outcome.gradients[0], np.sign(values) * weights)


def pooled_gradient(images: np.ndarray, weights: np.ndarray, size: int, stride: int):
    """By hand: each window's gradient goes to its first maximal lane (row-major)."""
    gradient = np.zeros_like(images)
    batch, channels, height, width = images.shape
    for n, c in np.ndindex(batch, channels):
        for i in range((height - size) // stride + 1):
            for j in range((width - size) // stride + 1):
                window = images[
                    n, c, i * stride : i * stride + size, j * stride : j * stride + size
                ]
                row, column = divmod(int(np.argmax(window)), size)
                gradient[n, c, i * stride + row, j * stride + column] += weights[n, c, i, j]
    return gradient


TIED_IMAGE = np.array(
    [[5, 5, 1, 2], [5, 5, 2, 2], [0, 3, 7, 1], [3, 1, 7, 7]], dtype=np.float32
).reshape(1, 1, 4, 4)


@pytest.mark.parametrize(("size", "stride"), [(2, 2), (2, 1), (3, 1)])
def test_max_pool_tie_sends_the_gradient_to_the_earliest_lane(size: int, stride: int):
    images = np.concatenate([TIED_IMAGE, -TIED_IMAGE], axis=1)
    build = parameters_of(lambda tape, x: max_pool(x, size, stride))
    outcome, _ = both_routes(build, [images], seed=9)
    out_side = (4 - size) // stride + 1
    weights = weighting((1, 2, out_side, out_side), 9).astype(np.float32)
    expected = pooled_gradient(images, weights, size, stride)
    np.testing.assert_allclose(outcome.gradients[0], expected, rtol=1e-6, atol=0)
    # Sending ties anywhere else would give another gradient: the case is discriminating.
    latest = pooled_gradient(images[..., ::-1, ::-1], weights[..., ::-1, ::-1], size, stride)
    assert not np.allclose(expected, latest[..., ::-1, ::-1])


def test_value_used_twice():
    x = np.array([[0.5, -1.25, 3.0], [2.0, -0.75, 1.5]], dtype=np.float32)
    build = parameters_of(lambda tape, a: a * a)
    outcome, _ = both_routes(build, [x], seed=10)
    weights = weighting(x.shape, 10).astype(np.float32)
    # The two contributions weights * x are accumulated with one add: exactly twice one.
    expected = (weights * x) + (weights * x)
    assert outcome.gradients[0].tobytes() == expected.tobytes()


def test_unused_parameters_have_zero_gradient_on_both_routes():
    def express(tape, used, unused, dead_branch):
        dead_branch.exp()  # recorded, but no ancestor of the loss
        return used.tanh()

    arrays = [np.ones((2, 3), np.float32), np.ones((4,), np.float32), np.ones((3,), np.float32)]
    outcome, _ = both_routes(parameters_of(express), arrays, seed=11)
    assert np.any(outcome.gradients[0] != 0)
    for gradient, array in zip(outcome.gradients[1:], arrays[1:]):
        assert gradient.shape == array.shape
        assert gradient.tobytes() == np.zeros_like(array).tobytes()


def test_rank0_operands_and_python_numbers():
    def express(tape, a, s):
        return ((a * 2.0 + 1.0) / s - s * a).maximum(s) * 0.5 + (3.0 - s)

    arrays = [np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3), np.array(1.5, np.float32)]
    outcome, _ = both_routes(parameters_of(express), arrays, seed=12)
    assert outcome.gradients[1].shape == ()


def smooth(program: Program, arrays: list[np.ndarray]) -> bool:
    """Whether finite differences can be trusted: no relu, heaviside, abs, leaky_relu, clamp,
    maximum, argmax (max along an axis) or max_pool input within reach of its corner, and
    nothing huge or non-finite."""
    tape, loss, _ = record(program.build, arrays, program.seed, np.float64)
    network = tape.into_network()
    plan = network.entry([loss.symbol]).backward().lower()
    run = plan.forward(network.parameters())
    for index in plan.evaluated:
        node = network.nodes[index]
        value = run.of(network.symbol(index)).numpy()
        if not np.all(np.isfinite(value)) or np.any(np.abs(value) > 1e4):
            return False
        if node.operation in ("relu", "heaviside", "abs", "leaky_relu"):
            gap = np.abs(run.of(network.symbol(node.inputs[0])).numpy())
        elif node.operation in ("clamp", "clamp_window"):
            operand = run.of(network.symbol(node.inputs[0])).numpy()
            bounds = [node.attributes.get(name) for name in ("low", "high")]
            gap = np.stack([np.abs(operand - bound) for bound in bounds if bound is not None])
        elif node.operation == "argmax":
            operand = run.of(network.symbol(node.inputs[0])).numpy()
            axis = node.attributes["axis"]
            gap = np.max(operand, axis=axis, keepdims=True) - operand
        elif node.operation == "maximum":
            left, right = (run.of(network.symbol(i)).numpy() for i in node.inputs)
            gap = np.abs(left - right)
        elif node.operation == "max_pool":
            size, stride = node.attributes["size"], node.attributes["stride"]
            windows = sliding_window_view(
                run.of(network.symbol(node.inputs[0])).numpy(), (size, size), axis=(2, 3)
            )[:, :, ::stride, ::stride].reshape(*node.shape, size * size)
            gap = np.abs(windows[..., :, None] - windows[..., None, :])
        else:
            continue
        if np.any((gap > 0) & (gap < 1e-4)):
            return False
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_graphs_agree_bitwise_and_with_finite_differences(program: Program):
    arrays = program.arrays()
    single = [array.astype(np.float32) for array in arrays]
    both_routes(program.build, single, program.seed, np.float32)
    double, _ = both_routes(program.build, arrays, program.seed, np.float64)
    if not smooth(program, arrays):
        event("finite differences skipped: a corner or a huge value")
        return
    event(f"finite differences over {sum(array.size for array in arrays)} elements")
    numeric = finite_differences(program.build, arrays, program.seed)
    for analytic, expected in zip(double.gradients, numeric):
        scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
        np.testing.assert_allclose(analytic, expected, rtol=1e-5, atol=1e-6 * scale)

"""Sums over short rows run as products with ones, the same on every route (issue 47).

A batch norm written by hand (mean over the batch and both spatial axes, subtract,
square, mean, rsqrt, multiply) sums `[N, C, H, W]` along its last axis of a few
elements in the forward pass and, in its gradient, down to `[1, C, 1, 1]`: NumPy sums
such short rows one short loop at a time (1024 rows of 8 took 40 us, a product with ones
1.4 us; those sums were a third of a user ResNet's kernel time). So a floating sum along
the last axis is one product of the rows with a vector of ones, and a sum down to a
shape merges neighbouring axes first (`[N, C, H*W]`), then sums the leading group as
column sums and the rest as row sums. The routes share these kernels, so engine,
recorded and remat still agree to the bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from topos import Tape, Tensor
from topos.ops.primitive import REGISTRY
from topos.ops.primitives.reduction import _sum_to_passes
from topos.tensor import Shape


def _draw(shape, seed: int = 3, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("shape", [(1024, 8), (16, 8, 8, 8), (37, 5, 13), (3, 1)])
def test_a_sum_along_the_last_axis_is_a_product_with_ones(shape):
    operand = _draw(shape)
    kernel = REGISTRY["sum"].kernel
    rows = operand.reshape(-1, shape[-1])
    expected = np.matmul(rows, np.ones(shape[-1], np.float32)).reshape(shape[:-1])
    found = kernel(operand, axis=len(shape) - 1)
    assert found.tobytes() == expected.tobytes()
    specialized = REGISTRY["sum"].specialize((Shape(shape),), {"axis": len(shape) - 1})
    slot = np.empty(shape[:-1], np.float32)
    assert specialized(operand, out=slot) is slot
    assert slot.tobytes() == expected.tobytes()
    # Still the sum: against float64's, to float32 rounding.
    exact = operand.astype(np.float64).sum(axis=-1)
    np.testing.assert_allclose(found, exact, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(16, 64), (16, 8), (4096, 16), (6, 5, 4)])
def test_a_small_sum_along_the_leading_axis_is_a_product_with_ones(shape):
    # A recurrent cell's bias gradient: [16, 64] summed over its 16 rows.
    operand = _draw(shape)
    columns = operand.reshape(shape[0], -1)
    expected = np.matmul(np.ones(shape[0], np.float32), columns).reshape(shape[1:])
    found = REGISTRY["sum"].kernel(operand, axis=0)
    assert found.tobytes() == expected.tobytes()
    specialized = REGISTRY["sum"].specialize((Shape(shape),), {"axis": 0})
    slot = np.empty(shape[1:], np.float32)
    assert specialized(operand, out=slot) is slot
    assert slot.tobytes() == expected.tobytes()
    np.testing.assert_allclose(found, operand.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-5)
    integers = np.arange(np.prod(shape), dtype=np.int64).reshape(shape)
    assert specialized(integers).tolist() == integers.sum(axis=0).tolist()


def test_an_integer_sum_along_the_last_axis_stays_exact():
    operand = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    found = REGISTRY["sum"].kernel(operand, axis=2)
    assert found.dtype == np.int64
    assert found.tolist() == operand.sum(axis=2).tolist()


def test_a_batch_norms_statistics_gradient_is_summed_over_merged_axes():
    # [16, 8, 8, 8] down to [1, 8, 1, 1]: [16, 8, 64], the 16 summed first as column
    # sums (long rows of 512), then the 64 as row sums.
    merged, passes, target = _sum_to_passes((16, 8, 8, 8), (1, 8, 1, 1))
    assert merged == (16, 8, 64)
    assert passes == ((0, True), (1, False))
    assert target == (1, 8, 1, 1)


@pytest.mark.parametrize(
    "operand, target",
    [
        ((16, 8, 8, 8), (1, 8, 1, 1)),  # a batch norm's scale and shift
        ((4, 3, 512, 16), (3, 1, 16)),  # leading axes, then an interior stretched one
        ((6, 5, 4), (1, 1, 1)),  # everything
        ((6, 1, 4), (4,)),  # an axis of 1 in the operand, leading axes missing
        ((5, 7), (5, 1)),  # the last axis alone
        ((2, 3, 4, 5), (3, 1, 5)),  # summed, kept, summed, kept
    ],
)
@pytest.mark.parametrize("transposed", [False, True])
def test_a_sum_to_a_shape_is_the_sum_and_the_same_in_the_plan(operand, target, transposed):
    array = _draw(operand)
    if transposed:
        # Laid out otherwise in memory: the kernel sums the same values the same way.
        array = np.asfortranarray(array)
    found = REGISTRY["sum"].kernel(array, to_shape=target)
    assert found.shape == target
    exact = np.broadcast_to(array.astype(np.float64), operand)
    lead = len(operand) - len(target)
    axes = tuple(range(lead)) + tuple(
        lead + axis
        for axis, extent in enumerate(target)
        if extent == 1 and operand[lead + axis] != 1
    )
    expected = exact.sum(axis=axes, keepdims=True).reshape(target)
    np.testing.assert_allclose(found, expected, rtol=1e-5, atol=1e-4)
    specialized = REGISTRY["sum"].specialize((Shape(operand),), {"to_shape": target})
    slot = np.empty(target, np.float32)
    specialized(array, out=slot)
    assert slot.tobytes() == found.tobytes()


def _hand_written_batch_norm_model(dtype=np.float32):
    """A user's convolution-free batch norm block: statistics by mean, subtract, square,
    mean, rsqrt, multiply, then a per-channel scale and shift and a weighted sum."""
    tape = Tape()
    rng = np.random.default_rng(11)

    def payload(array):
        return Tensor.adopt(array.astype(dtype))

    x = tape.input(payload(rng.standard_normal((16, 8, 8, 8))))
    scale = tape.parameter(payload(rng.uniform(0.5, 1.5, (1, 8, 1, 1))))
    shift = tape.parameter(payload(rng.standard_normal((1, 8, 1, 1))))
    weights = tape.parameter(payload(rng.standard_normal((16, 8, 8, 8))))
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=(0, 2, 3), keepdims=True)
    normed = centred * (variance + 1e-5).rsqrt() * scale + shift
    loss = (normed.relu() * weights).mean()
    parameters = (scale, shift, weights)
    adjoints = tape.differentiate(loss, parameters)
    return tape.into_network(), adjoints, loss.symbol, parameters


def test_a_hand_written_batch_norm_takes_the_row_sums_on_every_route_to_the_bit():
    network, adjoints, loss, parameters = _hand_written_batch_norm_model()
    recorded = network.entry(adjoints.roots()).lower()
    # The gradient's sums down to [1, 8, 1, 1] are in the plan, bound to the merged passes.
    sums_to = [
        index
        for index in recorded.evaluated
        if network.nodes[index].operation == "sum"
        and network.nodes[index].attributes.get("to_shape") == (1, 8, 1, 1)
    ]
    assert sums_to
    state = network.parameters()
    recorded_run = recorded.forward(state, defaults=True)
    recorded_bits = {
        symbol: recorded_run.of(adjoints.of(symbol)).numpy().tobytes()
        for symbol in (parameter.symbol for parameter in parameters)
    }
    engine = network.entry([loss]).backward().lower()
    engine_gradients = engine.forward(state, defaults=True).backward(loss).parameters(state)
    engine_bits = {symbol: tensor.numpy().tobytes() for symbol, tensor in engine_gradients.items()}
    remat = network.entry(adjoints.roots()).lower("floor")
    remat_run = remat.forward(state, defaults=True)
    remat_bits = {
        symbol: remat_run.of(adjoints.of(symbol)).numpy().tobytes() for symbol in recorded_bits
    }
    assert engine_bits == recorded_bits == remat_bits


def test_the_hand_written_batch_norms_gradients_are_the_finite_differences_in_float64():
    network, adjoints, loss, parameters = _hand_written_batch_norm_model(np.float64)
    plan = network.entry(adjoints.roots()).lower()
    forward = network.entry([loss]).lower()
    state = network.parameters()
    run = plan.forward(state, defaults=True)
    step = 1e-6

    def loss_at(symbol, base, channel, offset):
        moved = base.copy()
        moved[0, channel, 0, 0] += offset
        again = forward.forward(state.replace({symbol: moved}), defaults=True)
        return float(again.of(loss).numpy())

    for parameter in parameters[:2]:  # the scale and the shift: sums down to [1, 8, 1, 1]
        symbol = parameter.symbol
        gradient = run.of(adjoints.of(symbol)).numpy()
        base = state.of(symbol).numpy()
        for channel in (0, 3, 7):
            ahead = loss_at(symbol, base, channel, step)
            behind = loss_at(symbol, base, channel, -step)
            difference = (ahead - behind) / (2 * step)
            assert gradient[0, channel, 0, 0] == pytest.approx(difference, rel=1e-6, abs=1e-9)

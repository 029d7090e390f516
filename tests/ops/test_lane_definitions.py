"""The lane kernels against their definitions, bit for bit, on drawn data.

test_lane_maximum checks the kernels on chosen data; here hypothesis draws the data:
any shape and lane axes, float32 or float64, values mixing ties (a few small numbers),
signed zeros, infinities, NaN and arbitrary floats, operands and outputs in any layout,
any workspace, and blocks of any size (the kernels work through the lanes a block at
a time; a block of one entry and blocks that split a lane unevenly must not change a
bit). The definitions are the plain loops the module docstring states:

- lane_argmax: lane 0 wins, until a lane is greater than the running left-biased
  `np.maximum` of the lanes before it (which a NaN makes NaN, so no later lane wins);
  the last lane that was greater wins.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.ops.test_lane_maximum import lane_major, outs
from topos.ops import REGISTRY
from topos.ops.primitives import lane_maximum
from topos.tensor import Shape

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0, 1e-45, -3.4e38]


def defined_winners(x: np.ndarray, axes) -> np.ndarray:
    """lane_argmax by its definition, one lane at a time."""
    lanes = list(lane_major(x, axes))
    winners = np.zeros(lanes[0].shape, x.dtype)
    running = lanes[0]
    for number, lane in enumerate(lanes[1:], start=1):
        winners[lane > running] = number
        running = np.maximum(running, lane)
    return winners


@st.composite
def lane_problems(draw):
    """(x, lane axes, block entries, layout)."""
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    axes = tuple(sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1))))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    size = int(np.prod(shape))
    value = st.one_of(st.sampled_from(SPECIAL), st.floats(width=32))
    x = np.array(draw(st.lists(value, min_size=size, max_size=size)), dtype).reshape(shape)
    block = draw(st.sampled_from([1, 2, 3, 7, 1 << 16]))
    layout = draw(st.sampled_from(["c", "fortran", "reversed", "strided"]))
    return x, axes, block, layout


def laid_out(x: np.ndarray, layout: str) -> np.ndarray:
    """`x`'s values in another memory layout."""
    if layout == "fortran":
        return np.asfortranarray(x)
    if layout == "reversed":
        return np.flip(np.flip(x, 0).copy(), 0)
    if layout == "strided":
        wide = np.full((*x.shape[:-1], 2 * x.shape[-1]), np.nan, x.dtype)
        wide[..., ::2] = x
        return wide[..., ::2]
    return x


def workspaces(operation: str, shapes, **attributes) -> list:
    """No workspace, the sized one (NaN-filled), and one too small."""
    elements = REGISTRY[operation].memory.workspace(*shapes, **attributes)
    return [None, np.full(elements, np.nan, np.float32), np.full(3, np.nan, np.float32)]


@settings(max_examples=400, deadline=None)
@given(lane_problems())
def test_lane_argmax_is_its_definition(problem):
    x, axes, block, layout = problem
    expected = defined_winners(x, axes)
    operand = laid_out(x, layout)
    with mock.patch.object(lane_maximum, "_BLOCK_ENTRIES", block):
        for workspace in workspaces("lane_argmax", (Shape(x.shape),), axes=axes):
            result = REGISTRY["lane_argmax"].kernel(operand, workspace=workspace, axes=axes)
            assert result.dtype == x.dtype
            assert result.tobytes() == expected.tobytes()
        for out in outs(expected.shape, x.dtype):
            result = REGISTRY["lane_argmax"].kernel(operand, out=out, axes=axes)
            assert result is out
            assert np.ascontiguousarray(out).tobytes() == expected.tobytes()


def test_lane_argmax_numbers_more_lanes_than_a_byte_holds():
    # 300 lanes: the lane numbers outgrow a byte; the winners are still exact.
    generator = np.random.default_rng(30)
    x = generator.integers(0, 50, (300, 7)).astype(np.float32)
    x[:, 3] = -np.arange(300)  # lane 0 wins
    x[:, 4] = np.arange(300)  # the last lane wins
    winners = REGISTRY["lane_argmax"].kernel(x)
    assert winners.tobytes() == defined_winners(x, (0,)).tobytes()
    assert winners[3] == 0 and winners[4] == 299

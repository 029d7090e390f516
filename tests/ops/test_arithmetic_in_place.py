"""Elementwise arithmetic written over an operand it reads: the same bits as into fresh memory.

add, sub, mul and div declare `overwrites`: the forward memory plan may hand one of them
an operand's own bytes as `out` (cifar10's bias sums are written over their products).
Here hypothesis draws the operands (signed zeros, infinities, NaN, arbitrary floats),
including a row broadcast down a matrix of short rows (the widened bias path, taken
here at any row count) on either side, and checks that the kernel writing over either
full-shaped operand gives the very bits it gives into a fresh array.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from topos.ops import REGISTRY
from topos.ops.primitives import arithmetic

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 3.0, 1e-45, 3.4e38]


@st.composite
def operands(draw):
    """(operation, left, right, dtype): a full matrix and a full, row or scalar operand."""
    operation = draw(st.sampled_from(["add", "sub", "mul", "div"]))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    rows, columns = draw(st.integers(1, 40)), draw(st.integers(1, 12))
    value = st.one_of(st.sampled_from(SPECIAL), st.floats(width=32))

    def array(shape):
        # hypothesis's array strategy, not a list of floats made into one: it draws
        # the same values several times faster (the test took 18 s of the suite)
        return draw(arrays(dtype, shape, elements=value))

    full = array((rows, columns))
    kind = draw(st.sampled_from(["full", "row", "broadcast_along"]))
    if kind == "full":
        other = array((rows, columns))
    elif kind == "row":
        other = array((columns,))
    else:
        other = np.broadcast_to(array((columns,)), (rows, columns))
    if draw(st.booleans()):
        return operation, full, other, dtype
    return operation, other, full, dtype


@pytest.mark.parametrize("many_rows", [2, arithmetic._MANY_ROWS], ids=["widened", "as_is"])
@settings(max_examples=200, deadline=None)
@given(operands())
def test_writing_over_an_operand_gives_the_fresh_bits(many_rows, problem):
    operation, left, right, dtype = problem
    kernel = REGISTRY[operation].kernel
    with np.errstate(all="ignore"), mock.patch.object(arithmetic, "_MANY_ROWS", many_rows):
        expected = kernel(left, right)
        assert expected.dtype == dtype
        for position in (0, 1):
            operands = [left, right]
            if operands[position].shape != expected.shape or not operands[position].strides[0]:
                continue  # a row, or a broadcast view: never the output's own bytes
            target = operands[position] = operands[position].copy()
            result = kernel(*operands, out=target)
            assert result is target
            assert target.tobytes() == expected.tobytes()

"""Products with few columns in row blocks: matmul stacks the blocks' products, matmul_tn
sums a long reduction block by block, a group of blocks at a time onto the running sum:
the same product to float32 rounding, its bits those of the blocks' products added in
order and fixed by the shapes alone (never by the operands' layout), and its block
products kept in the workspace the memory plan gives it."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.allocations import peak_allocation
from topos.ops import REGISTRY
from topos.ops.primitives import matmul
from topos.ops.primitives.matmul import (
    _REDUCTION_BLOCK,
    SMALL_PRODUCT,
    _reduction_blocks,
    _row_block,
)
from topos.tensor import Shape

matmul_tn = REGISTRY["matmul_tn"].kernel
BLOCK = _REDUCTION_BLOCK


def operands(rows: int, columns: int, width: int):
    rng = np.random.default_rng(rows + columns + width)
    left = rng.standard_normal((rows, columns)).astype(np.float32)
    right = rng.standard_normal((rows, width)).astype(np.float32)
    return left, right


def in_order(left, right, block: int) -> np.ndarray:
    """matmul_tn by its definition: each block's product (the rows past the last whole
    block one more), added in order."""
    rows = left.shape[0]
    starts = list(range(0, rows - rows % block, block))
    spans = [slice(start, start + block) for start in starts]
    if rows % block:
        spans.append(slice(rows - rows % block, rows))
    total = np.matmul(left[spans[0]].T, right[spans[0]])
    for span in spans[1:]:
        total = total + np.matmul(left[span].T, right[span])
    return total


def test_operands_that_fit_in_cache_are_multiplied_whole():
    # a transformer's [1024, 64] activations, whole; the image workloads' smallest
    # blocked operands (mnist's first convolution, 451584 elements) still blocked
    assert _row_block((1024, 64), (64, 64)) == 0
    assert _reduction_blocks((1024, 64), (1024, 64)) == 0
    assert _row_block((50176, 9), (9, 8)) == 8192
    assert _reduction_blocks((50176, 9), (50176, 8)) == 50176 // BLOCK


@mock.patch.object(matmul, "_WHOLE_ELEMENTS", 0)
def test_only_long_reductions_with_few_columns_are_blocked():
    assert _reduction_blocks((4 * BLOCK, 27), (4 * BLOCK, 16)) == 4
    assert _reduction_blocks((4 * BLOCK + 5, 144), (4 * BLOCK + 5, 32)) == 4  # and a remainder
    assert _reduction_blocks((64 * BLOCK, 288), (64 * BLOCK, 64)) == 0  # a block past 10^6
    assert _reduction_blocks((2 * BLOCK - 1, 27), (2 * BLOCK - 1, 16)) == 0  # short
    assert _reduction_blocks((2, 4 * BLOCK, 27), (2, 4 * BLOCK, 16)) == 0  # batched


@mock.patch.object(matmul, "_WHOLE_ELEMENTS", 0)
def test_products_with_few_columns_are_cut_into_small_power_of_two_blocks():
    assert _row_block((65536, 27), (27, 16)) == 2048  # 2048 * 27 * 16 <= 10^6
    assert _row_block((16384, 144), (144, 32)) == 128
    assert _row_block((4096, 288), (288, 64)) == 0  # a block of 54 rows: too few
    assert _row_block((255, 144), (144, 32)) == 0  # one block
    assert _row_block((2, 4096, 27), (2, 27, 16)) == 0  # batched
    block = _row_block((10**6, 100), (100, 10))
    assert block * 100 * 10 <= SMALL_PRODUCT < 2 * block * 100 * 10


@st.composite
def reductions(draw):
    """A blocked reduction's operands (small numbers of rows a block, of blocks a group)."""
    block = draw(st.sampled_from([1, 2, 3, 8]))
    columns, width = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    rows = draw(st.integers(2 * block, 12 * block))
    group = draw(st.integers(1, 5)) * columns * width
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    left = rng.standard_normal((rows, columns)).astype(np.float32)
    right = rng.standard_normal((rows, width)).astype(np.float32)
    return left, right, block, group


@settings(max_examples=100, deadline=None)
@given(reductions())
def test_a_blocked_reduction_is_its_blocks_added_in_order(problem):
    left, right, block, group = problem
    with (
        mock.patch.object(matmul, "_REDUCTION_BLOCK", block),
        mock.patch.object(matmul, "_GROUP_ELEMENTS", group),
        mock.patch.object(matmul, "_WHOLE_ELEMENTS", 0),
    ):
        assert _reduction_blocks(left.shape, right.shape) == left.shape[0] // block
        size = REGISTRY["matmul_tn"].memory.workspace(Shape(left.shape), Shape(right.shape))
        workspace = np.full(size, np.nan, np.float32)
        result = matmul_tn(left, right, workspace=workspace)
        into = np.empty((left.shape[1], right.shape[1]), np.float32, order="F")
        matmul_tn(left, right, out=into)
    assert result.tobytes() == in_order(left, right, block).tobytes()
    assert np.ascontiguousarray(into).tobytes() == result.tobytes()
    exact = left.astype(np.float64).T @ right.astype(np.float64)
    np.testing.assert_allclose(result, exact, rtol=1e-4, atol=1e-4)


def test_an_unblocked_product_is_one_blas_product():
    left, right = operands(4 * BLOCK, 288, 64)
    assert matmul_tn(left, right).tobytes() == np.matmul(left.T, right).tobytes()


@pytest.mark.parametrize("order", ["F", "strided"])
def test_the_bits_do_not_depend_on_the_operands_layout(order):
    left, right = operands(40 * BLOCK + 3, 27, 16)
    if order == "F":
        other_left, other_right = np.asfortranarray(left), np.asfortranarray(right)
    else:
        other_left = np.repeat(left, 2, axis=1)[:, ::2]
        other_right = np.repeat(right, 2, axis=1)[:, ::2]
    assert matmul_tn(other_left, other_right).tobytes() == matmul_tn(left, right).tobytes()


def test_the_block_products_live_in_the_workspace():
    left, right = operands(50 * BLOCK, 144, 32)
    size = REGISTRY["matmul_tn"].memory.workspace(Shape(left.shape), Shape(right.shape))
    group = (1 << 15) // (144 * 32)
    assert size == (group + 2) * 144 * 32
    workspace = np.empty(size, np.float32)
    out = np.empty((144, 32), np.float32)
    reference = matmul_tn(left, right)
    # Beyond the views' Python objects, nothing: one block's product is 18 KiB.
    assert peak_allocation(lambda: matmul_tn(left, right, out=out, workspace=workspace)) < 4096
    assert out.tobytes() == reference.tobytes()
    assert reference.tobytes() == in_order(left, right, BLOCK).tobytes()


@pytest.mark.parametrize("rows", [4 * 2048, 4 * 2048 + 100])
def test_a_product_with_few_columns_is_its_row_blocks_stacked(rows):
    left, _ = operands(rows, 27, 16)
    right = np.random.default_rng(5).standard_normal((27, 16)).astype(np.float32)
    starts = range(0, rows, 2048)
    expected = np.concatenate([np.matmul(left[start : start + 2048], right) for start in starts])
    result = REGISTRY["matmul"].kernel(left, right)
    assert result.tobytes() == expected.tobytes()
    np.testing.assert_allclose(result, left.astype(np.float64) @ right, rtol=1e-4, atol=1e-4)
    fortran_out = np.empty_like(expected, order="F")
    REGISTRY["matmul"].kernel(np.asfortranarray(left), right, out=fortran_out)
    assert np.ascontiguousarray(fortran_out).tobytes() == expected.tobytes()

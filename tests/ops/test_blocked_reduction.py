"""Tall, narrow products in row blocks: matmul stacks the blocks' products, matmul_tn sums
a long, narrow reduction block by block: the same product to float32
rounding, its bits fixed by the shapes alone (never by the operands' layout), and its
block products kept in the workspace the memory plan gives it."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.allocations import peak_allocation
from topos.ops import REGISTRY
from topos.ops.matmul import _REDUCTION_BLOCK, _blocks
from topos.tensor import Shape

matmul_tn = REGISTRY["matmul_tn"].kernel


def operands(rows: int, columns: int, width: int):
    rng = np.random.default_rng(rows + columns + width)
    left = rng.standard_normal((rows, columns)).astype(np.float32)
    right = rng.standard_normal((rows, width)).astype(np.float32)
    return left, right


def test_only_long_narrow_reductions_are_blocked():
    assert _blocks((4 * _REDUCTION_BLOCK, 27), (4 * _REDUCTION_BLOCK, 16)) == 4
    assert _blocks((4 * _REDUCTION_BLOCK, 144), (4 * _REDUCTION_BLOCK, 32)) == 1  # wide
    assert _blocks((_REDUCTION_BLOCK, 27), (_REDUCTION_BLOCK, 16)) == 1  # short
    assert _blocks((3 * _REDUCTION_BLOCK + 1, 27), (3 * _REDUCTION_BLOCK + 1, 16)) == 1
    assert _blocks((2, 4 * _REDUCTION_BLOCK, 27), (2, 4 * _REDUCTION_BLOCK, 16)) == 1  # batched


def test_a_blocked_product_is_the_blocks_added_in_order():
    left, right = operands(4 * _REDUCTION_BLOCK, 27, 16)
    expected = np.zeros((27, 16), np.float32)
    for block in range(4):
        rows = slice(block * _REDUCTION_BLOCK, (block + 1) * _REDUCTION_BLOCK)
        expected += np.matmul(left[rows].T, right[rows])
    result = matmul_tn(left, right)
    assert result.tobytes() == expected.tobytes()
    np.testing.assert_allclose(
        result, left.astype(np.float64).T @ right.astype(np.float64), rtol=1e-4, atol=1e-3
    )


def test_an_unblocked_product_is_one_blas_product():
    left, right = operands(3 * _REDUCTION_BLOCK + 5, 27, 16)
    assert matmul_tn(left, right).tobytes() == np.matmul(left.T, right).tobytes()


@pytest.mark.parametrize("order", ["F", "strided"])
def test_the_bits_do_not_depend_on_the_operands_layout(order):
    left, right = operands(4 * _REDUCTION_BLOCK, 27, 16)
    if order == "F":
        other_left, other_right = np.asfortranarray(left), np.asfortranarray(right)
    else:
        other_left = np.repeat(left, 2, axis=1)[:, ::2]
        other_right = np.repeat(right, 2, axis=1)[:, ::2]
    assert matmul_tn(other_left, other_right).tobytes() == matmul_tn(left, right).tobytes()


def test_the_block_products_live_in_the_workspace():
    left, right = operands(8 * _REDUCTION_BLOCK, 27, 16)
    size = REGISTRY["matmul_tn"].workspace(Shape(left.shape), Shape(right.shape))
    assert size == 8 * 27 * 16
    workspace = np.empty(size, np.float32)
    out = np.empty((27, 16), np.float32)
    reference = matmul_tn(left, right)
    assert peak_allocation(lambda: matmul_tn(left, right, out=out, workspace=workspace)) < 1024
    assert out.tobytes() == reference.tobytes()


def test_a_tall_narrow_product_is_its_row_blocks_stacked():
    left, _ = operands(4 * _REDUCTION_BLOCK, 27, 16)
    right = np.random.default_rng(5).standard_normal((27, 16)).astype(np.float32)
    expected = np.concatenate(
        [
            np.matmul(left[block * _REDUCTION_BLOCK : (block + 1) * _REDUCTION_BLOCK], right)
            for block in range(4)
        ]
    )
    result = REGISTRY["matmul"].kernel(left, right)
    assert result.tobytes() == expected.tobytes()
    np.testing.assert_allclose(result, left.astype(np.float64) @ right, rtol=1e-4, atol=1e-4)
    fortran_out = np.empty_like(expected, order="F")
    REGISTRY["matmul"].kernel(np.asfortranarray(left), right, out=fortran_out)
    assert np.ascontiguousarray(fortran_out).tobytes() == expected.tobytes()

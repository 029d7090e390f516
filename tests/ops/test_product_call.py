"""A product's one BLAS call: np.dot for two matrices, with np.matmul's bits (issue 47).

NumPy's matmul is a generalized ufunc whose setup cost 1.2 us a call more than np.dot's
1.6 on a GRU's 8 x 32 matrices. For two matrices both
make the same BLAS call (gemm, or syrk for A @ A^T), so `product_call` takes dot there:
hypothesis draws the shapes (extents of 1 included, where BLAS could take another
path), the operands' layouts (a transposed view, as matmul_nt and matmul_tn pass), the
dtype and the values. dot and matmul are two computations: where they reach BLAS by
different paths (gemv for an extent of 1, another kernel on another CPU) their bits may
part (DESIGN.md, "Bits"), so the product must agree with matmul to its rounding; what
holds by construction is that every route calls `product_call`, so the routes share it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos.ops.primitives.matmul import product_call

extents = st.integers(min_value=1, max_value=40)


def _assert_rounding_apart(found: np.ndarray, expected: np.ndarray, depth: int) -> None:
    """`found` within the rounding of a `depth`-term sum of products of unit normals."""
    epsilon = float(np.finfo(found.dtype).eps)
    np.testing.assert_allclose(found, expected, rtol=0, atol=4 * depth * epsilon * np.sqrt(depth))


def _matrix(seed: int, shape: tuple[int, int], transposed: bool, dtype) -> np.ndarray:
    generator = np.random.default_rng(seed)
    if transposed:
        # The same shape laid out column-major: the transposed view BLAS reads for free.
        return generator.standard_normal(shape[::-1]).astype(dtype).T
    return generator.standard_normal(shape).astype(dtype)


@settings(max_examples=300, deadline=None)
@given(
    rows=extents,
    depth=extents,
    columns=extents,
    left_transposed=st.booleans(),
    right_transposed=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    into_out=st.booleans(),
)
def test_two_matrices_multiply_as_matmul_does(
    rows, depth, columns, left_transposed, right_transposed, dtype, seed, into_out
):
    left = _matrix(seed, (rows, depth), left_transposed, dtype)
    right = _matrix(seed + 1, (depth, columns), right_transposed, dtype)
    expected = np.matmul(left, right)
    out = np.empty((rows, columns), dtype) if into_out else None
    found = product_call(left, right, out)
    if into_out:
        assert found is out
    assert found.dtype == expected.dtype and found.shape == expected.shape
    _assert_rounding_apart(found, expected, depth)


@settings(max_examples=100, deadline=None)
@given(rows=extents, depth=extents, seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_a_matrix_times_its_own_transpose_agrees_with_matmul(rows, depth, seed):
    # One buffer on both sides: BLAS's syrk, which both dot and matmul choose.
    matrix = _matrix(seed, (rows, depth), False, np.float32)
    _assert_rounding_apart(product_call(matrix, matrix.T), np.matmul(matrix, matrix.T), depth)


def test_matrices_skip_matmul_and_batches_keep_it(monkeypatch):
    left = _matrix(1, (8, 32), False, np.float32)
    right = _matrix(2, (32, 32), False, np.float32)
    expected = np.matmul(left, right)

    def refused(*operands, **keywords):
        raise AssertionError("matmul called")

    monkeypatch.setattr(np, "matmul", refused)
    _assert_rounding_apart(product_call(left, right), expected, 32)
    out = np.empty((8, 32), np.float32)
    assert product_call(left, right, out) is out
    with pytest.raises(AssertionError, match="matmul called"):
        product_call(left[None], right[None])  # a batch: matmul's broadcasting rules
    with pytest.raises(AssertionError, match="matmul called"):
        product_call(left, right, np.empty((32, 8), np.float32).T)  # an out dot refuses

"""row_sums: sums along the last axis as one matrix-vector product.

NumPy reduces short rows (a transformer's 64 features, or attention's 64 positions)
one short loop at a time, several times slower than the bytes warrant; a product of
the rows with a vector of ones runs in BLAS at memory speed. Its summation order is
BLAS's for that shape: fixed for a machine and its BLAS, the same for both routes
(every kernel that sums rows sums them here), but not the order of `np.sum`, with
which it agrees to rounding.
"""

from __future__ import annotations

import functools
import math

import numpy as np


@functools.cache
def _ones(length: int, dtype: np.dtype) -> np.ndarray:
    ones = np.ones(length, dtype=dtype)
    ones.flags.writeable = False
    return ones


def row_sums(values: np.ndarray) -> np.ndarray:
    """The sums of `values` along its last axis, `[..., 1]` (a fresh small array)."""
    values = np.ascontiguousarray(values)
    length = values.shape[-1]
    # the row count spelled out: -1 is ambiguous when rows have no entries
    rows = values.reshape(math.prod(values.shape[:-1]), length)
    return np.matmul(rows, _ones(length, values.dtype)).reshape(*values.shape[:-1], 1)


def column_sums(values: np.ndarray) -> np.ndarray:
    """The sums of `values [rows, columns]` over its rows, `[columns]`."""
    values = np.ascontiguousarray(values)
    return np.matmul(_ones(values.shape[0], values.dtype), values)


def last_axis_sums(values: np.ndarray, out: np.ndarray | None, rows: int) -> np.ndarray:
    """`values` summed over its last axis (its shape without that axis, into `out` if
    given), a floating array as one product of its `rows` rows with a vector of ones:
    NumPy reduces short rows one short loop at a time (1024 rows of 8: 40 us against
    1.4 us for the product); another dtype by `np.sum`."""
    if values.dtype.kind != "f":
        return np.sum(np.ascontiguousarray(values), axis=-1, out=out)
    values = np.ascontiguousarray(values)
    length = values.shape[-1]
    matrix = values.reshape(rows, length)
    if out is not None and out.flags.c_contiguous:
        np.matmul(matrix, _ones(length, values.dtype), out=out.reshape(rows))
        return out
    result = np.matmul(matrix, _ones(length, values.dtype)).reshape(values.shape[:-1])
    if out is None:
        return result
    np.copyto(out, result)
    return out

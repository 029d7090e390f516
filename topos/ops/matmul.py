"""matmul: the matrix product over the last two axes, batched over any leading ones."""

from __future__ import annotations

import numpy as np

from topos.ops.primitive import primitive
from topos.ops.shape_rules import fail
from topos.tensor import Shape


def _infer_matmul(left: Shape, right: Shape) -> Shape:
    if left.rank < 2 or right.rank < 2:
        raise fail("matmul", f"shapes {left} and {right} must both have rank 2 or more")
    if left.rank != right.rank or tuple(left)[:-2] != tuple(right)[:-2]:
        raise fail("matmul", f"batch axes of {left} and {right} differ")
    if left[-1] != right[-2]:
        raise fail(
            "matmul",
            f"shapes {left} and {right} do not chain ({left[-1]} columns against {right[-2]} rows)",
        )
    return Shape((*tuple(left)[:-1], right[-1]))


def _derive_matmul(algebra, inputs, output, gradient, needs):
    left, right = inputs
    return (
        algebra.matmul(gradient, algebra.swap_last_axes(right)) if needs[0] else None,
        algebra.matmul(algebra.swap_last_axes(left), gradient) if needs[1] else None,
    )


@primitive("matmul", 2, _infer_matmul, _derive_matmul)
def matmul(left, right, out=None):
    """Matrix product; operands are made contiguous first so that memory layout can
    never change which BLAS path, and so which summation order, computes it."""
    return np.matmul(np.ascontiguousarray(left), np.ascontiguousarray(right), out=out)

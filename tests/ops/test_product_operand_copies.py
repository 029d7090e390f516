"""Products over operands the memory plan lays out other than C-contiguously (attention's
heads, permuted views of `[B, T, D]`): each kernel copies such an operand into the
workspace its rule sizes from the operands' layouts, so given `out=` and that workspace
it allocates (almost) nothing, and its bits are those of the product without one."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.allocations import peak_allocation
from topos.ops import REGISTRY
from topos.ops.memory_order import identity
from topos.tensor import Shape

BATCH, HEADS, POSITIONS, WIDTH = 4, 4, 64, 16
HEAD_ORDER = (0, 2, 1, 3)


def heads(seed: int) -> np.ndarray:
    """`[B, H, T, d]` as attention splits it: a permuted view of a `[B, T, H, d]` array."""
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((BATCH, POSITIONS, HEADS, WIDTH)).astype(np.float32)
    return rows.transpose(HEAD_ORDER)


def scores(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((BATCH, HEADS, POSITIONS, POSITIONS)).astype(np.float32)


# Each product as attention uses it: (operation, left, right, left's and right's layout).
CASES = {
    "matmul_nt": (heads(1), heads(2), HEAD_ORDER, HEAD_ORDER),  # q k^T, and g_mixed v^T
    "matmul": (scores(3), heads(4), identity(4), HEAD_ORDER),  # weights v, and g_scores k
    "matmul_tn": (scores(5), heads(6), identity(4), HEAD_ORDER),  # g_scores^T q, weights^T g
}


@pytest.mark.parametrize("operation", sorted(CASES))
def test_a_product_copies_its_strided_operands_into_its_workspace(operation):
    primitive = REGISTRY[operation]
    left, right, left_layout, right_layout = CASES[operation]
    shapes = [Shape(left.shape), Shape(right.shape)]
    size = primitive.memory.workspace_elements(shapes, [left_layout, right_layout], {})
    copies = sum(operand.size for operand in (left, right) if not operand.flags.c_contiguous)
    assert size == copies > 0
    workspace = np.empty(size, np.float32)
    reference = primitive.kernel(left, right)
    out = np.empty(reference.shape, np.float32)
    assert (
        peak_allocation(lambda: primitive.kernel(left, right, out=out, workspace=workspace)) < 1024
    )
    assert out.tobytes() == reference.tobytes()


@pytest.mark.parametrize("operation", sorted(CASES))
def test_contiguous_operands_need_no_workspace(operation):
    left, right, _, _ = CASES[operation]
    shapes = [Shape(left.shape), Shape(right.shape)]
    dense = [identity(4), identity(4)]
    assert REGISTRY[operation].memory.workspace_elements(shapes, dense, {}) == 0

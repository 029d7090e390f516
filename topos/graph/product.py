"""matmul: the matrix product as `torch.matmul` (and `@`) means it, recorded onto the
`matmul` primitive, which multiplies the last two axes of operands whose leading axes
agree.

- both of rank 2 or more with the same leading axes: one `matmul` node;
- a rank-1 operand: promoted to a matrix (a row on the left, a column on the right) and
  that axis dropped from the product; two vectors give their dot product;
- a rank-2 right operand under a batched left one (`[B, T, D] @ [D, E]`, a linear layer
  over a sequence): the left one's rows stacked into one matrix and the product reshaped
  back, one product instead of B;
- other leading axes are broadcast against each other (copies), then multiplied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from topos.errors import ShapeError
from topos.ops.shape_rules import broadcast

if TYPE_CHECKING:
    from topos.graph.value import Value


def _check(operand: object, side: str) -> None:
    from topos.graph.value import Value

    if not isinstance(operand, Value):
        raise TypeError(f"matmul: the {side} operand is a {type(operand).__name__}, not a Value")


def matmul(left: Value, right: Value) -> Value:
    """`left @ right` with `torch.matmul`'s rules for ranks and leading axes (see the
    module)."""
    _check(left, "left")
    _check(right, "right")
    left_rank, right_rank = left.shape.rank, right.shape.rank
    if left_rank == 0 or right_rank == 0:
        raise ShapeError(
            f"matmul: shapes {left.shape} and {right.shape}: a rank-0 operand has no matrix; "
            f"multiply by it with *"
        )
    if left_rank == 1 and right_rank == 1:
        if left.shape != right.shape:
            raise ShapeError(f"matmul: vectors {left.shape} and {right.shape} differ in length")
        return (left * right).sum()
    if left_rank == 1:
        return matmul(left.reshape(1, left.shape[0]), right).squeeze(-2)
    if right_rank == 1:
        return matmul(left, right.reshape(right.shape[0], 1)).squeeze(-1)
    left_lead, right_lead = tuple(left.shape)[:-2], tuple(right.shape)[:-2]
    if left_lead == right_lead:
        return left.tape.record("matmul", (left, right))
    if right_rank == 2:
        rows = left.reshape(-1, left.shape[-1])
        product = left.tape.record("matmul", (rows, right))
        return product.reshape(*left_lead, left.shape[-2], right.shape[-1])
    from topos.tensor import Shape

    lead = tuple(broadcast("matmul", Shape(left_lead), Shape(right_lead)))
    left_full = left.expand(*lead, *tuple(left.shape)[-2:])
    right_full = right.expand(*lead, *tuple(right.shape)[-2:])
    return left.tape.record("matmul", (left_full, right_full))

"""matmul: the matrix product as `torch.matmul` (and `@`) means it, recorded onto the
`matmul` primitive, which multiplies the last two axes of operands whose leading axes
agree.

- both of rank 2 or more with the same leading axes: one `matmul` node;
- a rank-1 operand: promoted to a matrix (a row on the left, a column on the right) and
  that axis dropped from the product; two vectors give their dot product;
- a rank-2 right operand under a batched left one (`[B, T, D] @ [D, E]`, a linear layer
  over a sequence): the left one's rows stacked into one matrix and the product reshaped
  back, one product instead of B;
- other leading axes are broadcast against each other (copies), then multiplied;
- an operand that is another's last two axes swapped (`w.T`, `k.transpose(-2, -1)`)
  is multiplied as that other, by `matmul_nt` (on the right) or `matmul_tn` (on the
  left): BLAS reads it transposed where it lies, where `matmul` would copy the swapped
  view into a contiguous one every run (a recurrent cell's `h @ W_hh^T`, once a position).
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
        return _product(left, right)
    if right_rank == 2:
        rows = left.reshape(-1, left.shape[-1])
        product = _product(rows, right)
        return product.reshape(*left_lead, left.shape[-2], right.shape[-1])
    from topos.tensor import Shape

    lead = tuple(broadcast("matmul", Shape(left_lead), Shape(right_lead)))
    left_full = left.expand(*lead, *tuple(left.shape)[-2:])
    right_full = right.expand(*lead, *tuple(right.shape)[-2:])
    return left.tape.record("matmul", (left_full, right_full))


def _product(left: Value, right: Value) -> Value:
    """One product node of operands with the same leading axes: `matmul_nt` of the
    right operand's source when it is a swap of its last two axes, else `matmul_tn` of
    the left one's, else `matmul`."""
    source = _swapped_source(right)
    if source is not None:
        return left.tape.record("matmul_nt", (left, source))
    source = _swapped_source(left)
    if source is not None:
        return left.tape.record("matmul_tn", (source, right))
    return left.tape.record("matmul", (left, right))


def _swapped_source(value: Value) -> Value | None:
    """The Value whose last two axes `value` swaps, and nothing else (a `permute` of
    axes `(0, ..., r-3, r-1, r-2)`); None for any other node."""
    from topos.graph.value import Value, last_two_swapped

    node = value.tape.nodes[value.index]
    if node.operation != "permute":
        return None
    axes = tuple(node.attributes["axes"])
    if len(axes) < 2 or axes != last_two_swapped(len(axes)):
        return None
    return Value(value.tape, node.inputs[0])

"""cumsum: running sums along one axis (PyTorch's `cumsum(dim)`), forward or, with
`reverse`, from the last entry back: each is the other's adjoint.

The kernel makes its operand contiguous and calls `np.cumsum`, whose running sum adds
the entries one after another in order, so its bits follow from the values alone.
"""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import check_axis
from topos.tensor import Shape


def _infer_cumsum(operand: Shape, axis: int = 0, reverse: bool = False) -> Shape:
    check_axis("cumsum", operand, axis)
    return operand


def _derive_cumsum(algebra, inputs, output, gradient, needs, axis=0, reverse=False):
    # Entry i of the output sums entries 0..i, so entry j of the input reaches outputs
    # j..n-1: its gradient is the running sum of the output's gradient from the end.
    return (algebra.cumsum(gradient, axis=axis, reverse=not reverse),)


@primitive("cumsum", 1, _infer_cumsum, _derive_cumsum)
def cumsum(operand, out=None, axis=0, reverse=False):
    """Running sums along `axis`: entry i holds entries 0..i (with `reverse`, i..n-1)."""
    operand = np.ascontiguousarray(operand)
    if not reverse:
        return np.cumsum(operand, axis=axis, out=out)
    flipped = np.ascontiguousarray(np.flip(operand, axis))
    summed = np.flip(np.cumsum(flipped, axis=axis), axis)
    if out is None:
        return np.ascontiguousarray(summed)
    np.copyto(out, summed)
    return out


declare_examples(
    "cumsum",
    Example("cumsum", normal((3, 4)), on_parameters(lambda a: a.cumsum(1))),
    Example("cumsum_leading", normal((3, 2, 2)), on_parameters(lambda a: a.cumsum(0))),
    Example(
        "cumsum_reverse",
        normal((3, 4)),
        on_parameters(lambda a: a.tape.record("cumsum", (a,), axis=1, reverse=True)),
    ),
)


def _emit_cumsum(xp, x, axis=0, reverse=False):
    if not reverse:
        return xp.cumsum(x, axis)
    return xp.flip(xp.cumsum(xp.flip(x, (axis,)), axis), (axis,))


declare_emission("cumsum", _emit_cumsum)

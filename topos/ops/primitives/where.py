"""where: `a` where a fixed condition holds, else `b`, elementwise, the three broadcast
against each other (PyTorch's `torch.where` with a condition that needs no gradient).

The condition is an operand of 0s and 1s (a constant leaf, or an input fed per batch),
never differentiated. A selection, not `a c + b (1 - c)`: an unselected infinity (a
mask's -inf) must not turn the product into NaN.
"""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal
from topos.ops.memory_order import follows_dense_operand
from topos.ops.memory_rules import MemoryRules
from topos.ops.primitive import declare_examples, primitive
from topos.ops.primitives.reduction import reduce_to
from topos.ops.shape_rules import broadcast
from topos.tensor import Shape


def _infer_where(condition: Shape, first: Shape, second: Shape) -> Shape:
    return broadcast("where", broadcast("where", condition, first), second)


def _derive_where(algebra, inputs, output, gradient, needs):
    # The gradient goes where each operand was chosen; zeros elsewhere. The condition,
    # fixed, gets nothing.
    condition, first, second = inputs
    zero = algebra.constant(0.0, Shape(()))
    return (
        None,
        reduce_to(algebra, algebra.where(condition, gradient, zero), algebra.shape(first))
        if needs[1]
        else None,
        reduce_to(algebra, algebra.where(condition, zero, gradient), algebra.shape(second))
        if needs[2]
        else None,
    )


@primitive(
    "where", 3, _infer_where, _derive_where, memory=MemoryRules(layout=follows_dense_operand)
)
def where(condition, first, second, out=None):
    """`first` where `condition` is nonzero, else `second`, elementwise."""
    chosen = np.not_equal(condition, 0)
    if out is None:
        return np.where(chosen, first, second).astype(first.dtype, copy=False)
    np.copyto(out, np.broadcast_to(second, out.shape))
    np.copyto(out, np.broadcast_to(first, out.shape), where=chosen)
    return out


def _chosen(tape, tensors):
    """where over a fixed checkerboard, with a broadcast `[4]` second operand."""
    from topos.tensor import Tensor

    first = tape.parameter(tensors[0])
    second = tape.parameter(tensors[1])
    pattern = (np.arange(12).reshape(3, 4) % 3 == 0).astype(tape.dtype)
    condition = tape.leaf(Tensor(pattern.shape, pattern, dtype=tape.dtype))
    return tape.record("where", (condition, first, second)), [first.symbol, second.symbol]


declare_examples(
    "where",
    Example("where", normal((3, 4), (4,)), _chosen),
)

# Emission: the condition is fixed (nothing flows back to it).
declare_emission(
    "where", lambda xp, condition, first, second: xp.where(condition != 0, first, second)
)

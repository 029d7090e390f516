"""where: `a` where a fixed condition holds, else `b` (`torch.where`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from topos.graph.value import Value
from topos.tensor import Tensor


def where(condition: Any, first: Value | float, second: Value | float) -> Value:
    """`first` where `condition` is true, else `second`, elementwise, the three broadcast
    against each other; one `where` node. The condition is fixed: a boolean (or 0/1)
    array or Tensor recorded as a constant leaf, or a Value (an input fed per batch)
    whose nonzero entries select `first`. It gets no gradient; `first` and `second` get
    the gradient where each was chosen. At least one of them is a Value."""
    anchor = first if isinstance(first, Value) else second
    if not isinstance(anchor, Value):
        raise TypeError("where: `first` or `second` must be a Value")
    tape = anchor.tape
    if not isinstance(condition, Value):
        if isinstance(condition, Tensor):
            condition = condition.numpy()
        mask = np.asarray(condition).astype(tape.dtype)
        condition = tape.leaf(Tensor(mask.shape, mask, dtype=tape.dtype))
    first = anchor._coerce(first, "where")
    second = anchor._coerce(second, "where")
    return tape.record("where", (condition, first, second))

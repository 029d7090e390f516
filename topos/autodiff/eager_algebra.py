"""EagerAlgebra: runs derivative rules now, on arrays, with the primitives' own kernels."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from topos.autodiff.algebra import Algebra
from topos.ops.primitive import REGISTRY
from topos.tensor import Shape


class EagerAlgebra(Algebra):
    """Operands are arrays; `apply` calls the very kernel a plan would call for that node.

    Given `calls` (a BackwardPlan's, one per `apply` of the sweep in order), the k-th
    `apply` runs the k-th entry's kernel, which writes into its arena slot, after
    checking that the operation, operand shapes and attributes are the simulated ones.
    Should the sweep ever leave the simulated path, that call and every later one
    allocate afresh (`misses` counts it): a slot planned for another call could still
    hold a live buffer. `out=` never changes a kernel's bits.
    """

    def __init__(self, dtype: np.dtype, calls: Sequence[Any] | None = None) -> None:
        self.dtype = np.dtype(dtype)
        self._calls = calls
        self._position = 0
        self.misses = 0

    def apply(self, operation: str, operands: Sequence[Any], **attributes: Any) -> Any:
        """Computes `operation` on `operands` now."""
        calls = self._calls
        if calls is not None:
            position = self._position
            self._position = position + 1
            if position < len(calls):
                expected, shapes, expected_attributes, kernel = calls[position]
                if (
                    expected == operation
                    and shapes == tuple([_extents(operand) for operand in operands])
                    and attributes == expected_attributes
                ):
                    return kernel(*operands)
            self._calls = None
            self.misses += 1
        return REGISTRY[operation].kernel(*operands, **attributes)

    def shape(self, operand: Any) -> Shape:
        """The operand's shape."""
        return _shape(_extents(operand))

    def constant(self, value: float, shape: Shape) -> np.ndarray:
        """An array of `shape` filled with `value`: the payload a recorded leaf would hold."""
        return np.full(tuple(shape), value, dtype=self.dtype)


def _extents(operand: Any) -> tuple[int, ...]:
    """An operand's extents: its own `shape` (every array and NumPy scalar has one,
    and reading it costs a fraction of `np.shape`'s dispatch), else `np.shape`'s."""
    try:
        return operand.shape
    except AttributeError:
        return np.shape(operand)


@lru_cache(maxsize=1024)
def _shape(extents: tuple[int, ...]) -> Shape:
    """The Shape of an array's extents. A sweep asks for the same few shapes every step,
    and a Shape is immutable, so one is made per extents rather than one per question."""
    return Shape(extents)

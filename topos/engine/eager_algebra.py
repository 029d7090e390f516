"""EagerAlgebra: runs derivative rules now, on arrays, with the primitives' own kernels."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from topos.ops.algebra import Algebra
from topos.ops.primitive import REGISTRY
from topos.tensor import Shape


class EagerAlgebra(Algebra):
    """Operands are arrays; `apply` calls the very kernel a plan would call for that node."""

    def __init__(self, dtype: np.dtype) -> None:
        self.dtype = np.dtype(dtype)

    def apply(self, operation: str, operands: Sequence[Any], **attributes: Any) -> Any:
        """Computes `operation` on `operands` now."""
        return REGISTRY[operation].kernel(*operands, **attributes)

    def shape(self, operand: Any) -> Shape:
        """The operand's shape."""
        return Shape(np.shape(operand))

    def constant(self, value: float, shape: Shape) -> np.ndarray:
        """An array of `shape` filled with `value`: the payload a recorded leaf would hold."""
        return np.full(tuple(shape), value, dtype=self.dtype)

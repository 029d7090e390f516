"""Indices: an immutable payload of integer indices (token ids, class labels) below a bound."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from topos.tensor import Payload, Shape, ShapeLike, require_volume

#: The dtype indices are held in: NumPy's own index type, so kernels index with no copy.
INDEX_DTYPE = np.dtype(np.intp)


class Indices(Payload):
    """Integers in `0..classes-1` with a Shape: what an index input of a tape holds.

    `Indices(shape, data, classes)` copies `data` and refuses a value outside the
    range, so a kernel that picks rows by these never reads outside its table.
    """

    __slots__ = ("classes",)

    def __init__(self, shape: ShapeLike, data: Any, classes: int) -> None:
        shape = Shape.of(shape)
        source = np.asarray(data)
        if source.size and not np.issubdtype(source.dtype, np.integer):
            raise TypeError(f"Indices: values must be integers, not {source.dtype}")
        require_volume("Indices", source.size, shape)
        classes = int(classes)
        if classes < 1:
            raise ValueError(f"Indices: {classes} classes; at least one is needed")
        if source.size and (source.min() < 0 or source.max() >= classes):
            raise ValueError(f"Indices: a value lies outside 0..{classes - 1}")
        array = np.array(source, dtype=INDEX_DTYPE, copy=True).reshape(shape.extents)
        array.flags.writeable = False
        self._array = array
        self._shape = shape
        self.classes = classes

    @classmethod
    def zeros(cls, shape: ShapeLike, classes: int) -> Indices:
        """Indices of `shape`, every one 0: the default payload of an index input."""
        shape = Shape.of(shape)
        return cls(shape, np.zeros(shape.extents, dtype=INDEX_DTYPE), classes)

    @classmethod
    def of(cls, values: Iterable[int] | np.ndarray, classes: int) -> Indices:
        """`values` (any integer array or nested sequence) as Indices of their own shape."""
        array = np.asarray(values if isinstance(values, np.ndarray) else list(values))
        return cls(array.shape, array, classes)

    def rows(self, start: int, stop: int) -> Indices:
        """Rows `start:stop` along the first axis (a shard of a batch), without a copy."""
        part = Indices.__new__(Indices)
        part._array = self._array[start:stop]
        part._shape = Shape(part._array.shape)
        part.classes = self.classes
        return part

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Indices):
            return NotImplemented
        return self.classes == other.classes and self._same_values(other)

    def __repr__(self) -> str:
        return f"Indices(shape={self._shape}, classes={self.classes})"

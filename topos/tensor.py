"""Tensor and Shape: immutable payloads and their extents."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from math import prod
from typing import Any

import numpy as np

from topos.errors import ShapeError

SUPPORTED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class Shape:
    """The extents of a tensor along each axis; a scalar has rank 0."""

    __slots__ = ("_extents",)

    def __init__(self, extents: Iterable[int] = ()) -> None:
        extents = tuple(int(extent) for extent in extents)
        if any(extent < 0 for extent in extents):
            raise ShapeError(f"shape {list(extents)} has a negative extent")
        self._extents = extents

    @classmethod
    def of(cls, shape: ShapeLike) -> Shape:
        """Returns `shape` as a Shape, accepting a Shape, an int or a sequence of ints."""
        if isinstance(shape, Shape):
            return shape
        if isinstance(shape, (int, np.integer)):
            return cls((int(shape),))
        return cls(shape)

    @property
    def rank(self) -> int:
        """The number of axes."""
        return len(self._extents)

    @property
    def volume(self) -> int:
        """The number of elements: the product of the extents (1 for a scalar)."""
        return prod(self._extents)

    @property
    def extents(self) -> tuple[int, ...]:
        """The extents as a plain tuple."""
        return self._extents

    def __iter__(self) -> Iterator[int]:
        return iter(self._extents)

    def __len__(self) -> int:
        return len(self._extents)

    def __getitem__(self, axis: int) -> int:
        return self._extents[axis]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Shape):
            return self._extents == other._extents
        if isinstance(other, tuple):
            return self._extents == other
        if isinstance(other, list):
            return list(self._extents) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._extents)

    def __repr__(self) -> str:
        return f"Shape({list(self._extents)})"

    def __str__(self) -> str:
        return "[" + ", ".join(str(extent) for extent in self._extents) + "]"


ShapeLike = Shape | int | Sequence[int]


def _float_dtype(requested: Any, data: Any) -> np.dtype:
    if requested is not None:
        dtype = np.dtype(requested)
    elif isinstance(data, np.ndarray) and data.dtype in SUPPORTED_DTYPES:
        dtype = data.dtype
    else:
        dtype = np.dtype(np.float32)
    if dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"a Tensor holds float32 or float64, not {dtype}")
    return dtype


def require_volume(kind: str, size: int, shape: Shape) -> None:
    """Refuses (ShapeError) `size` values that do not fill `shape`, naming the payload `kind`."""
    if size != shape.volume:
        raise ShapeError(f"{kind}: {size} values do not fill shape {shape} (volume {shape.volume})")


class Payload:
    """What every immutable payload is: a read-only NumPy array with a Shape (a Tensor's
    floats, an Indices' integers)."""

    __slots__ = ("_array", "_shape")

    _array: np.ndarray
    _shape: Shape

    @property
    def shape(self) -> Shape:
        """The extents."""
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        """The dtype the values are held in: float32 or float64 for a Tensor."""
        return self._array.dtype

    def numpy(self) -> np.ndarray:
        """The values as a read-only NumPy array (no copy)."""
        return self._array

    def _same_values(self, other: Payload) -> bool:
        """Whether `other` has this shape, this dtype and every bit of these values."""
        return (
            self._shape == other._shape
            and self.dtype == other.dtype
            and self._array.tobytes() == other._array.tobytes()
        )

    # Equal payloads may be told apart by what they are (see `__eq__`); none is hashable.
    __hash__ = None  # type: ignore[assignment]


def _arithmetic(
    ufunc: np.ufunc, name: str, swap: bool = False
) -> Callable[[Tensor, Tensor | float], Tensor]:
    """A Tensor's operator method: `ufunc` of its payload and the other operand (a Tensor
    of its shape and dtype, a rank-0 one, or a Python number); `swap` for the reflected one."""

    def operator(self: Tensor, other: Tensor | float) -> Tensor:
        operand = self._operand(other, name)
        if operand is NotImplemented:
            return NotImplemented
        left, right = (operand, self._array) if swap else (self._array, operand)
        return Tensor._own(np.asarray(ufunc(left, right), dtype=self.dtype))

    return operator


class Tensor(Payload):
    """An immutable payload: a float32 (or float64) array with a Shape.

    `Tensor(shape, data)` copies `data` (a NumPy array or any sequence) so that
    nobody else can change it afterwards; `numpy()` hands out a read-only view.
    """

    __slots__ = ()

    def __init__(self, shape: ShapeLike, data: Any, dtype: Any = None) -> None:
        shape = Shape.of(shape)
        array = np.array(data, dtype=_float_dtype(dtype, data), copy=True)
        require_volume("Tensor", array.size, shape)
        # Locking the copy itself, not only a view of it, keeps anyone from turning
        # the read-only view writeable again.
        array.flags.writeable = False
        self._array = array.reshape(shape.extents)
        self._shape = shape

    @classmethod
    def adopt(cls, array: np.ndarray) -> Tensor:
        """Wraps `array` without copying; the caller promises never to write to it again."""
        if not isinstance(array, (np.ndarray, np.generic)):
            raise TypeError(f"Tensor.adopt takes a NumPy array, not {type(array).__name__}")
        if array.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"a Tensor holds float32 or float64, not {array.dtype}")
        array = np.asarray(array)
        tensor = cls.__new__(cls)
        view = array.view()
        view.flags.writeable = False
        tensor._array = view
        tensor._shape = Shape(array.shape)
        return tensor

    @classmethod
    def _own(cls, array: np.ndarray) -> Tensor:
        """Wraps a fresh array that nothing else holds, locking it for good."""
        array = np.asarray(array)
        array.flags.writeable = False
        return cls.adopt(array)

    @classmethod
    def filled(cls, shape: ShapeLike, value: float, dtype: Any = np.float32) -> Tensor:
        """A tensor of `shape` whose every element is `value`."""
        shape = Shape.of(shape)
        return cls._own(np.full(shape.extents, value, dtype=_float_dtype(dtype, None)))

    @classmethod
    def selection(
        cls, labels: Iterable[int], classes: int, value: float = 1.0, dtype: Any = np.float32
    ) -> Tensor:
        """One-hot rows: row i holds `value` in column `labels[i]` and zeros elsewhere."""
        labels = np.asarray(list(labels) if not isinstance(labels, np.ndarray) else labels)
        if labels.size and not np.issubdtype(labels.dtype, np.integer):
            raise TypeError(f"Tensor.selection: labels must be integers, not {labels.dtype}")
        if labels.size and (labels.min() < 0 or labels.max() >= classes):
            raise ValueError(f"Tensor.selection: a label lies outside 0..{classes - 1}")
        rows = np.zeros((labels.size, classes), dtype=_float_dtype(dtype, None))
        rows[np.arange(labels.size), labels.astype(np.int64)] = value
        return cls._own(rows)

    def scalar(self) -> float:
        """The single value of a volume-1 tensor, as a NumPy scalar of its dtype (np.float32)."""
        if self._shape.volume != 1:
            raise ShapeError(f"Tensor.scalar: shape {self._shape} holds more than one value")
        return self._array.reshape(())[()]

    def broadcast_like(self, other: Tensor) -> Tensor:
        """This rank-0 tensor repeated to `other`'s shape."""
        if self._shape.rank != 0 and self._shape != other.shape:
            raise ShapeError(
                f"Tensor.broadcast_like: shape {self._shape} cannot broadcast to {other.shape}"
            )
        return Tensor._own(np.broadcast_to(self._array, other.shape.extents).copy())

    def astype(self, dtype: Any) -> Tensor:
        """This tensor in `dtype` (float32 or float64): itself when it already is, else a
        rounded or widened copy (how a workload records its float32 draws in float64)."""
        if np.dtype(dtype) == self.dtype:
            return self
        return Tensor._own(self._array.astype(_float_dtype(dtype, None)))

    def clone(self) -> Tensor:
        """The same tensor; payloads are immutable, so sharing is safe."""
        return self

    def _operand(self, other: Tensor | float, operation: str) -> np.ndarray | float:
        if isinstance(other, Tensor):
            if other._shape != self._shape and other._shape.rank != 0 and self._shape.rank != 0:
                raise ShapeError(
                    f"Tensor {operation}: shapes {self._shape} and {other._shape} differ"
                )
            if other.dtype != self.dtype:
                raise TypeError(f"Tensor {operation}: dtypes {self.dtype} and {other.dtype} differ")
            return other._array
        if isinstance(other, (int, float, np.floating, np.integer)):
            # A Python number stays weak under NumPy's promotion: float32 stays float32.
            return float(other)
        return NotImplemented

    __add__ = _arithmetic(np.add, "add")
    __radd__ = _arithmetic(np.add, "add", swap=True)
    __sub__ = _arithmetic(np.subtract, "sub")
    __rsub__ = _arithmetic(np.subtract, "sub", swap=True)
    __mul__ = _arithmetic(np.multiply, "mul")
    __rmul__ = _arithmetic(np.multiply, "mul", swap=True)
    __truediv__ = _arithmetic(np.divide, "div")
    __rtruediv__ = _arithmetic(np.divide, "div", swap=True)

    def __neg__(self) -> Tensor:
        return Tensor._own(np.negative(self._array))

    def __eq__(self, other: object) -> bool:
        """Exact equality of shape, dtype and every bit of the payload."""
        return self._same_values(other) if isinstance(other, Tensor) else NotImplemented

    def __repr__(self) -> str:
        return f"Tensor(shape={self._shape}, dtype={self.dtype.name})"

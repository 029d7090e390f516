"""Value: a recording proxy; every operator or method records one node and returns its Value."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from topos.errors import ShapeError
from topos.graph.elementwise_methods import ElementwiseMethods
from topos.graph.indexing import index
from topos.graph.reduction_methods import ReductionMethods
from topos.graph.shape_methods import ShapeMethods
from topos.graph.symbol import Symbol
from topos.ops.primitive import REGISTRY
from topos.tensor import Shape, Tensor

if TYPE_CHECKING:
    from topos.graph.tape import Tape

Number = numbers.Real


def _normalise_axis(axis: int, rank: int, operation: str) -> int:
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"{operation}: axis must be an int, not {type(axis).__name__}")
    if -rank <= axis < 0:
        return axis + rank
    return axis


def last_two_swapped(rank: int) -> tuple[int, ...]:
    """The axes of `transpose` at `rank`: the last two swapped, the others in place (the
    product reads a node permuted so as its operand transposed: topos.graph.product)."""
    return (*range(rank - 2), rank - 1, rank - 2)


class Value(ElementwiseMethods, ReductionMethods, ShapeMethods):
    """Names node `index` of `tape` while recording; operands are never mutated.

    Python numbers (and NumPy scalars) mixed into arithmetic are recorded as rank-0
    leaves, which elementwise operations broadcast. An array or a Tensor is data, not a
    number: beside a Value, on either side of an operator, it is a TypeError saying to
    record it first (`tape.leaf(Tensor(...))` for a constant, `tape.input(...)` for a
    feed), and NumPy functions (`np.exp(x)`, `np.asarray(x)`) refuse a Value.

    Besides the methods below, every primitive registered with `value_method` is a
    method of its name; the elementwise ones are also methods of the class (see
    `ElementwiseMethods`), so `dir` and `help` show them; so are the reductions
    (`ReductionMethods`) and shape changes (`ShapeMethods`) PyTorch code calls by name.
    Basic indexing records `narrow`, `gather` and `reshape` (see `topos.graph.indexing`).
    """

    __slots__ = ("index", "tape")

    #: NumPy's operator dispatch is refused: with an array on the left, NumPy would
    #: otherwise apply the operator elementwise, recording one whole node per element
    #: into an array of objects. `None` makes NumPy hand the operator back to the Value,
    #: so an array on either side is the same TypeError (see `_coerce`).
    __array_ufunc__ = None

    def __init__(self, tape: Tape, index: int) -> None:
        self.tape = tape
        self.index = index

    @property
    def symbol(self) -> Symbol:
        """The detached name of this node, valid after sealing."""
        return Symbol(self.tape.origin, self.index)

    @property
    def shape(self) -> Shape:
        """The shape inferred when this node was recorded."""
        return self.tape.shape_of(self.index)

    def _record(self, operation: str, operands: Sequence[Value], **attributes: Any) -> Value:
        return self.tape.record(operation, operands, **attributes)

    def _coerce(self, other: Any, operation: str) -> Value:
        if isinstance(other, Value):
            return other
        if isinstance(other, Number) and not isinstance(other, bool):
            return self.tape.constant(float(other))
        if isinstance(other, (Tensor, list, tuple)) or hasattr(other, "__array__"):
            # An array is data: as a constant it is recorded once, by name, not mixed in.
            raise TypeError(
                f"{operation}: cannot combine a Value with {type(other).__name__} data; record "
                f"it first, as a constant (tape.leaf(Tensor(...))) or a fed input "
                f"(tape.input(...))"
            )
        raise TypeError(
            f"{operation}: cannot combine a Value with {type(other).__name__}; "
            f"use a Value or a Python number"
        )

    def __add__(self, other: Value | float) -> Value:
        return self._record("add", (self, self._coerce(other, "add")))

    def __radd__(self, other: float) -> Value:
        return self._record("add", (self._coerce(other, "add"), self))

    def __sub__(self, other: Value | float) -> Value:
        return self._record("sub", (self, self._coerce(other, "sub")))

    def __rsub__(self, other: float) -> Value:
        return self._record("sub", (self._coerce(other, "sub"), self))

    def __mul__(self, other: Value | float) -> Value:
        return self._record("mul", (self, self._coerce(other, "mul")))

    def __rmul__(self, other: float) -> Value:
        return self._record("mul", (self._coerce(other, "mul"), self))

    def __truediv__(self, other: Value | float) -> Value:
        return self._record("div", (self, self._coerce(other, "div")))

    def __rtruediv__(self, other: float) -> Value:
        return self._record("div", (self._coerce(other, "div"), self))

    def __neg__(self) -> Value:
        return self._record("neg", (self,))

    def __matmul__(self, other: Value) -> Value:
        from topos.graph.product import matmul

        return matmul(self, self._coerce_matrix(other, "right"))

    def __rmatmul__(self, other: Any) -> Value:
        from topos.graph.product import matmul

        return matmul(self._coerce_matrix(other, "left"), self)

    def _coerce_matrix(self, other: Any, side: str) -> Value:
        if isinstance(other, Value):
            return other
        if not isinstance(other, Number):
            self._coerce(other, "matmul")  # arrays and Tensors: the recording hint
        raise TypeError(f"matmul: the {side} operand is a {type(other).__name__}, not a Value")

    def __array__(self, *arguments: Any, **options: Any) -> Any:
        # np.asarray(value), np.exp(value) and friends: a Value has no payload to give
        # while recording, and an object array of one Value would only fail later.
        raise TypeError(
            "a Value is a node being recorded, not an array: use its methods (x.exp()) "
            "while recording, and read payloads with run.of(symbol) after a run"
        )

    def __bool__(self) -> bool:
        raise TypeError("a Value has no truth value while recording; compare payloads after a run")

    __hash__ = object.__hash__

    def __getattr__(self, name: str) -> Callable[..., Value]:
        # Only called when ordinary lookup fails: the primitives recorded by a method of
        # their own name (`value_method`), such as exp, relu, heaviside and maximum.
        primitive = REGISTRY.get(name)
        if primitive is None or not primitive.value_method:
            raise AttributeError(f"'Value' object has no attribute {name!r}")

        def method(*others: Value | float, **attributes: Any) -> Value:
            operands = (self, *(self._coerce(other, name) for other in others))
            if len(operands) != primitive.arity:
                raise TypeError(f"{name} takes {primitive.arity - 1} operand(s) besides this one")
            return self._record(name, operands, **attributes)

        method.__name__ = name
        method.__doc__ = primitive.kernel.__doc__
        return method

    def __dir__(self) -> list[str]:
        methods = [name for name, primitive in REGISTRY.items() if primitive.value_method]
        return sorted({*super().__dir__(), *methods})

    def permute(self, *axes: int) -> Value:
        """Reorders the axes: output axis i is input axis `axes[i]`."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        rank = self.shape.rank
        return self._record(
            "permute", (self,), axes=tuple(_normalise_axis(a, rank, "permute") for a in axes)
        )

    def transpose(self) -> Value:
        """Swaps the last two axes."""
        rank = self.shape.rank
        if rank < 2:
            raise ShapeError(f"transpose: shape {self.shape} has fewer than two axes")
        return self.permute(*last_two_swapped(rank))

    @property
    def T(self) -> Value:  # noqa: N802  (the conventional name)
        """Swaps the last two axes."""
        return self.transpose()

    def reshape(self, *shape: int) -> Value:
        """The same elements in row-major order under another shape; one extent may be
        -1, inferred from the others (`x.reshape(-1)` flattens)."""
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        extents = [int(extent) for extent in shape]
        if extents.count(-1) > 1:
            raise ShapeError(f"reshape: {extents} infers more than one extent")
        if -1 in extents:
            known = 1
            for extent in extents:
                if extent != -1:
                    known *= extent
            volume = self.shape.volume
            if known == 0 or volume % known:
                raise ShapeError(
                    f"reshape: shape {self.shape} ({volume} elements) cannot become {extents}"
                )
            extents[extents.index(-1)] = volume // known
        return self._record("reshape", (self,), shape=tuple(extents))

    def _axes(self, axis: int | Sequence[int], operation: str) -> list[int]:
        """Axes normalised (negative ones counted from the end), checked and distinct."""
        rank = self.shape.rank
        axes = [axis] if isinstance(axis, int) else list(axis)
        normalised = [_normalise_axis(each, rank, operation) for each in axes]
        for original, each in zip(axes, normalised):
            if not 0 <= each < rank:
                raise ShapeError(f"{operation}: axis {original} is outside shape {self.shape}")
        if len(set(normalised)) != len(normalised):
            raise ShapeError(f"{operation}: axes {axes} repeat an axis")
        return normalised

    def sum(
        self,
        axis: int | Sequence[int] | None = None,
        keepdims: bool = False,
        *,
        keepdim=None,
        dim: int | Sequence[int] | None = None,
    ) -> Value:
        """The sum of every element (rank 0), or along `axis` (an int or several), those
        axes kept with extent 1 when `keepdims` (PyTorch's `dim` and `keepdim` are the same)."""
        keepdims = keepdims if keepdim is None else keepdim
        axis = axis if dim is None else dim
        if axis is None:
            total = self._record("sum", (self,))
            return total.reshape(*([1] * self.shape.rank)) if keepdims else total
        axes = self._axes(axis, "sum")
        result = self
        for each in sorted(axes, reverse=True):
            result = result.sum_along(each)
        if keepdims:
            result = result.reshape(
                *(1 if position in axes else extent for position, extent in enumerate(self.shape))
            )
        return result

    def mean(
        self,
        axis: int | Sequence[int] | None = None,
        keepdims: bool = False,
        *,
        keepdim=None,
        dim: int | Sequence[int] | None = None,
    ) -> Value:
        """The mean of every element (rank 0), or along `axis`, as `sum` gives it divided
        by the count of elements summed."""
        keepdims = keepdims if keepdim is None else keepdim
        axis = axis if dim is None else dim
        axes = range(self.shape.rank) if axis is None else self._axes(axis, "mean")
        count = 1
        for each in axes:
            count *= self.shape[each]
        if count == 0:
            raise ShapeError(f"mean: shape {self.shape} holds no elements")
        return self.sum(axis, keepdims) / float(count)

    def __pow__(self, exponent: Value | float) -> Value:
        """Each element raised to `exponent`: a Python number records `power` (`x ** 2`,
        `x ** -0.5`), a Value `tensor_power` (broadcast; see
        `topos.ops.primitives.tensor_power`)."""
        if isinstance(exponent, Value):
            return self._record("tensor_power", (self, exponent))
        if not isinstance(exponent, Number) or isinstance(exponent, bool):
            raise TypeError(
                f"power: the exponent must be a Value or a Python number, not "
                f"{type(exponent).__name__}"
            )
        return self._record("power", (self,), exponent=float(exponent))

    def __rpow__(self, base: float) -> Value:
        """A Python number raised to each element (`2 ** x`, records `tensor_power`)."""
        return self._record("tensor_power", (self._coerce(base, "power"), self))

    def broadcast_to(self, *shape: int) -> Value:
        """This value repeated to `shape` by NumPy's broadcasting rules, a view (records
        `broadcast(to_shape=shape)`)."""
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        return self._record("broadcast", (self,), to_shape=tuple(int(extent) for extent in shape))

    def sum_along(self, axis: int) -> Value:
        """Sums out one axis (records `sum(axis=axis)`)."""
        return self._record(
            "sum", (self,), axis=_normalise_axis(axis, self.shape.rank, "sum_along")
        )

    def broadcast_along(self, axis: int, size: int) -> Value:
        """Inserts a new axis at `axis` holding `size` copies, a view (records
        `broadcast(axis=axis, size=size)`)."""
        axis = _normalise_axis(axis, self.shape.rank + 1, "broadcast_along")
        return self._record("broadcast", (self,), axis=axis, size=int(size))

    def logsumexp(self, axis: int = -1) -> Value:
        """log(sum(exp(x))) along one axis, stable for every finite input."""
        return self._record(
            "logsumexp", (self,), axis=_normalise_axis(axis, self.shape.rank, "logsumexp")
        )

    def pad(self, widths: Sequence[tuple[int, int]]) -> Value:
        """Surrounds each axis with (before, after) zeros."""
        widths = tuple((int(before), int(after)) for before, after in widths)
        return self._record("pad", (self,), widths=widths)

    def narrow(self, axis: int, start: int, length: int) -> Value:
        """The slice `start:start+length` along one axis."""
        axis = _normalise_axis(axis, self.shape.rank, "narrow")
        return self._record("narrow", (self,), axis=axis, start=int(start), length=int(length))

    def unfold(self, axis: int, size: int, stride: int = 1) -> Value:
        """Sliding windows along one axis; the window lanes become a new last axis."""
        axis = _normalise_axis(axis, self.shape.rank, "unfold")
        return self._record("unfold", (self,), axis=axis, size=int(size), stride=int(stride))

    def fold(self, axis: int, length: int, stride: int = 1) -> Value:
        """Adds window lanes (the last axis) back onto `axis` of extent `length`."""
        axis = _normalise_axis(axis, self.shape.rank - 1, "fold")
        return self._record("fold", (self,), axis=axis, length=int(length), stride=int(stride))

    def gather(self, axis: int, indices: Sequence[int]) -> Value:
        """The entries at `indices` along one axis."""
        axis = _normalise_axis(axis, self.shape.rank, "gather")
        return self._record("gather", (self,), axis=axis, indices=tuple(int(i) for i in indices))

    def __getitem__(self, key: Any) -> Value:
        """Basic indexing as NumPy and PyTorch mean it: integers (the axis dropped),
        slices with any step, `...` and `None` (a new axis of 1)."""
        return index(self, key)

    def __repr__(self) -> str:
        return f"Value(%{self.index}, shape={self.shape})"

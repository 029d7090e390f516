"""ReductionMethods: a Value's maxima, minima, statistics and running sums, spelled as
PyTorch spells them (`x.max(dim)`, `amax`, `argmax`, `var`, `std`, `cumsum`; `dim=` and
`keepdim=`, NumPy's `axis=` and `keepdims=` too).

The maxima are `max_along` over `argmax` (see `topos.ops.primitives.axis_maximum`): exact, the
gradient to the first largest entry. A minimum is the maximum of the negation (a
negation is exact), so its gradient goes to the first smallest entry. `var` and `std`
are composites of `mean`, subtraction, a square and `sum`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from topos.errors import ShapeError

if TYPE_CHECKING:
    from topos.graph.value import Value

Dims = int | Sequence[int] | None


class MaxResult(NamedTuple):
    """What `x.max(dim)` and `x.min(dim)` answer, as PyTorch's do: the `values` and the
    positions they were found at (`indices`, floats: the first of a tie; no gradient)."""

    values: Value
    indices: Value


def _chosen(dim, axis, operation: str):
    """The reduced axes, by PyTorch's name (`dim`) or NumPy's (`axis`), not both."""
    if dim is not None and axis is not None:
        raise TypeError(f"{operation}: give dim or axis, not both")
    return dim if axis is None else axis


def _kept(keepdim: bool, keepdims: bool | None) -> bool:
    return bool(keepdim if keepdims is None else keepdims)


class ReductionMethods:
    """Mixed into `Value`: each call records a few nodes, the operand never mutated."""

    __slots__ = ()

    def _flat_axis(self: Value, operation: str) -> tuple[Value, int]:
        """This value with every element along one axis (itself, when already rank 1)."""
        if self.shape.volume == 0:
            raise ShapeError(f"{operation}: shape {self.shape} holds no elements")
        flat = self if self.shape.rank == 1 else self.reshape(-1)
        return flat, 0

    def _one_axis(self: Value, dim: int, operation: str) -> int:
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"{operation}: dim must be an int, not {type(dim).__name__}")
        return self._axes(dim, operation)[0]

    def _max_over(self: Value, axis: int, keepdim: bool) -> MaxResult:
        winners = self.tape.record("argmax", (self,), axis=axis)
        values = self.tape.record("max_along", (self, winners), axis=axis)
        if keepdim:
            values, winners = values.unsqueeze(axis), winners.unsqueeze(axis)
        return MaxResult(values, winners)

    def max(
        self: Value, dim: int | Value | float | None = None, keepdim: bool = False
    ) -> Value | MaxResult:
        """The largest element (rank 0); with `dim`, `(values, indices)` along that axis,
        as `torch.max(x, dim)` (the gradient to the first largest entry); with a Value or
        a number, the elementwise `maximum`."""
        if dim is None:
            flat, axis = self._flat_axis("max")
            return flat._max_over(axis, False).values
        if not isinstance(dim, int) or isinstance(dim, bool):
            return self.maximum(dim)
        return self._max_over(self._one_axis(dim, "max"), keepdim)

    def min(
        self: Value, dim: int | Value | float | None = None, keepdim: bool = False
    ) -> Value | MaxResult:
        """The smallest element (rank 0); with `dim`, `(values, indices)` along that axis
        (the gradient to the first smallest entry); with a Value or a number, the
        elementwise `minimum`."""
        if dim is None:
            return -((-self).max())
        if not isinstance(dim, int) or isinstance(dim, bool):
            return self.minimum(dim)
        values, indices = (-self).max(dim, keepdim)
        return MaxResult(-values, indices)

    def amax(
        self: Value,
        dim: Dims = None,
        keepdim: bool = False,
        *,
        axis: Dims = None,
        keepdims: bool | None = None,
    ) -> Value:
        """The largest entry along `dim` (an int, several, or None for every axis),
        those axes kept with extent 1 when `keepdim` (`torch.amax`; the gradient to the
        first largest entry, where PyTorch's splits a tie evenly)."""
        dim = _chosen(dim, axis, "amax")
        keep = _kept(keepdim, keepdims)
        if dim is None or (not isinstance(dim, int) and len(dim) == 0):
            flat, position = self._flat_axis("amax")
            total = flat._max_over(position, False).values
            return total.reshape(*([1] * self.shape.rank)) if keep else total
        axes = self._axes(dim, "amax")
        result = self
        for each in sorted(axes, reverse=True):
            result = result._max_over(each, False).values
        if keep:
            extents = [
                1 if position in axes else extent for position, extent in enumerate(self.shape)
            ]
            result = result.reshape(*extents)
        return result

    def amin(
        self: Value,
        dim: Dims = None,
        keepdim: bool = False,
        *,
        axis: Dims = None,
        keepdims: bool | None = None,
    ) -> Value:
        """The smallest entry along `dim`, as `amax` of the negation (`torch.amin`)."""
        return -((-self).amax(dim, keepdim, axis=axis, keepdims=keepdims))

    def argmax(
        self: Value, dim: int | None = None, keepdim: bool = False, *, axis: int | None = None
    ) -> Value:
        """The position of the first largest entry along `dim` (of the flattened value
        when None), as a float; not differentiable (`torch.argmax`: read accuracy with it)."""
        dim = _chosen(dim, axis, "argmax")
        if dim is None:
            flat, position = self._flat_axis("argmax")
            found = self.tape.record("argmax", (flat,), axis=position)
            return found.reshape(*([1] * self.shape.rank)) if keepdim else found
        return self._max_over(self._one_axis(dim, "argmax"), keepdim).indices

    def argmin(
        self: Value, dim: int | None = None, keepdim: bool = False, *, axis: int | None = None
    ) -> Value:
        """The position of the first smallest entry along `dim`, as `argmax` of the
        negation (`torch.argmin`)."""
        return (-self).argmax(dim, keepdim, axis=axis)

    def var(
        self: Value,
        dim: Dims = None,
        unbiased: bool = True,
        keepdim: bool = False,
        *,
        correction: float | None = None,
        axis: Dims = None,
        keepdims: bool | None = None,
    ) -> Value:
        """The variance along `dim` (every axis when None): the squared deviations from
        the mean summed and divided by the count less `correction` (1, Bessel's, by
        default, as `torch.var`; `unbiased=False` or `correction=0` for the population's)."""
        dim = _chosen(dim, axis, "var")
        keep = _kept(keepdim, keepdims)
        axes = list(range(self.shape.rank)) if dim is None else self._axes(dim, "var")
        count = 1
        for each in axes:
            count *= self.shape[each]
        correction = (1.0 if unbiased else 0.0) if correction is None else float(correction)
        divisor = count - correction
        if divisor <= 0:
            raise ShapeError(
                f"var: {count} element(s) along {axes} of shape {self.shape} leave nothing "
                f"after a correction of {correction:g}"
            )
        centred = self - self.mean(axes, keepdims=True)
        return (centred * centred).sum(axes, keepdims=keep) / float(divisor)

    def std(
        self: Value,
        dim: Dims = None,
        unbiased: bool = True,
        keepdim: bool = False,
        *,
        correction: float | None = None,
        axis: Dims = None,
        keepdims: bool | None = None,
    ) -> Value:
        """The standard deviation along `dim`: the square root of `var` (`torch.std`)."""
        variance = self.var(
            dim, unbiased, keepdim, correction=correction, axis=axis, keepdims=keepdims
        )
        return variance.sqrt()

    def cumsum(self: Value, dim: int | None = None, *, axis: int | None = None) -> Value:
        """Running sums along `dim` (`torch.cumsum`): entry i holds entries 0..i."""
        dim = _chosen(dim, axis, "cumsum")
        if dim is None:
            raise TypeError("cumsum: give the axis to sum along (dim)")
        return self.tape.record("cumsum", (self,), axis=self._one_axis(dim, "cumsum"))

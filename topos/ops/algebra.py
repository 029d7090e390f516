"""Algebra: the small vocabulary of operations that derivative rules are written in.

A concrete algebra says what an operand is and how `apply` performs one
primitive on operands: the eager algebra computes arrays now, the recording
algebra appends nodes to a tape. Every convenience below is one `apply`, so a
rule means exactly the same sequence of kernels under either algebra.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from topos.ops.patch_window import PatchWindow
from topos.tensor import Shape


class Algebra:
    """Base class of the eager and recording algebras; rules call only these methods."""

    def apply(self, operation: str, operands: Sequence[Any], **attributes: Any) -> Any:
        """Performs primitive `operation` on `operands` with its static `attributes`."""
        raise NotImplementedError

    def shape(self, operand: Any) -> Shape:
        """The shape of an operand."""
        raise NotImplementedError

    def constant(self, value: float, shape: Shape) -> Any:
        """An operand of `shape` filled with `value`, in the graph's dtype."""
        raise NotImplementedError

    def add(self, left: Any, right: Any) -> Any:
        """Elementwise sum."""
        return self.apply("add", (left, right))

    def sub(self, left: Any, right: Any) -> Any:
        """Elementwise difference."""
        return self.apply("sub", (left, right))

    def mul(self, left: Any, right: Any) -> Any:
        """Elementwise product."""
        return self.apply("mul", (left, right))

    def div(self, left: Any, right: Any) -> Any:
        """Elementwise quotient."""
        return self.apply("div", (left, right))

    def neg(self, operand: Any) -> Any:
        """Elementwise negation."""
        return self.apply("neg", (operand,))

    def exp(self, operand: Any) -> Any:
        """Elementwise e**x."""
        return self.apply("exp", (operand,))

    def heaviside(self, operand: Any) -> Any:
        """1 where the operand is positive, else 0: the relu mask."""
        return self.apply("heaviside", (operand,))

    def matmul(self, left: Any, right: Any) -> Any:
        """Matrix product over the last two axes."""
        return self.apply("matmul", (left, right))

    def matmul_nt(self, left: Any, right: Any) -> Any:
        """`left @ right^T` over the last two axes."""
        return self.apply("matmul_nt", (left, right))

    def matmul_tn(self, left: Any, right: Any) -> Any:
        """`left^T @ right` over the last two axes."""
        return self.apply("matmul_tn", (left, right))

    def permute(self, operand: Any, axes: tuple[int, ...]) -> Any:
        """Reorders the axes."""
        return self.apply("permute", (operand,), axes=tuple(axes))

    def swap_last_axes(self, operand: Any) -> Any:
        """Transposes the last two axes."""
        rank = self.shape(operand).rank
        axes = (*range(rank - 2), rank - 1, rank - 2)
        return self.permute(operand, axes)

    def reshape(self, operand: Any, shape: Shape) -> Any:
        """The same elements in row-major order under another shape."""
        return self.apply("reshape", (operand,), shape=tuple(shape))

    def sum(self, operand: Any) -> Any:
        """The rank-0 sum of every element."""
        return self.apply("sum", (operand,))

    def expand(self, operand: Any, shape: Shape) -> Any:
        """A rank-0 operand repeated to `shape`."""
        return self.apply("expand", (operand,), shape=tuple(shape))

    def sum_along(self, operand: Any, axis: int) -> Any:
        """Sums out one axis."""
        return self.apply("sum_along", (operand,), axis=axis)

    def broadcast_along(self, operand: Any, axis: int, size: int) -> Any:
        """Inserts a new axis at `axis` holding `size` copies."""
        return self.apply("broadcast_along", (operand,), axis=axis, size=size)

    def pad(self, operand: Any, widths: tuple[tuple[int, int], ...]) -> Any:
        """Surrounds each axis with (before, after) zeros."""
        return self.apply("pad", (operand,), widths=tuple(tuple(w) for w in widths))

    def narrow(self, operand: Any, axis: int, start: int, length: int) -> Any:
        """The slice `start:start+length` along one axis."""
        return self.apply("narrow", (operand,), axis=axis, start=start, length=length)

    def unfold(self, operand: Any, axis: int, size: int, stride: int) -> Any:
        """Sliding windows along one axis; the window lanes become a new last axis."""
        return self.apply("unfold", (operand,), axis=axis, size=size, stride=stride)

    def fold(self, operand: Any, axis: int, length: int, stride: int) -> Any:
        """The adjoint of `unfold`: accumulates overlapping windows back onto an axis."""
        return self.apply("fold", (operand,), axis=axis, length=length, stride=stride)

    def im2col(self, images: Any, *, window: PatchWindow) -> Any:
        """The tap-major patch matrix `[N*OH*OW, KH*KW*C]` of images `[N, C, H, W]`
        (rows phase-major when `window.phases > 1`)."""
        return self.apply("im2col", (images,), window=window)

    def col2im(self, patches: Any, *, shape: tuple[int, ...], window: PatchWindow) -> Any:
        """The adjoint of `im2col`: adds patch entries back onto images of `shape`."""
        return self.apply("col2im", (patches,), shape=tuple(shape), window=window)

    def max_pool(self, operand: Any, size: int, stride: int) -> Any:
        """The largest lane of each `size x size` window of `[N, C, H, W]`."""
        return self.apply("max_pool", (operand,), size=size, stride=stride)

    def max_pool_route(self, operand: Any, gradient: Any, size: int, stride: int) -> Any:
        """Each pooled window's gradient, placed on the lane of `operand` that won it."""
        return self.apply("max_pool_route", (operand, gradient), size=size, stride=stride)

    def max_pool_pick(self, operand: Any, values: Any, size: int, stride: int) -> Any:
        """For each window of `operand`, the entry of `values` on the lane that won it."""
        return self.apply("max_pool_pick", (operand, values), size=size, stride=stride)

    def convolution_images(
        self, gradient: Any, kernel: Any, *, shape: tuple[int, ...], window: PatchWindow
    ) -> Any:
        """`col2im(gradient @ kernel^T)`: a convolution's gradient onto its images."""
        return self.apply(
            "convolution_images", (gradient, kernel), shape=tuple(shape), window=window
        )

    def lane_argmax(self, operand: Any, axes: tuple[int, ...] = (0,)) -> Any:
        """The number of the lane of `operand` (along `axes`) that wins each entry."""
        return self.apply("lane_argmax", (operand,), axes=tuple(axes))

    def lane_max(self, operand: Any, winners: Any, axes: tuple[int, ...] = (0,)) -> Any:
        """The largest lane of `operand`; `winners` is its lane_argmax."""
        return self.apply("lane_max", (operand, winners), axes=tuple(axes))

    def lane_place(
        self,
        winners: Any,
        gradient: Any,
        axes: tuple[int, ...] = (0,),
        extents: tuple[int, ...] = (1,),
    ) -> Any:
        """`gradient` placed on each entry's winning lane, zeros on the other lanes."""
        return self.apply(
            "lane_place", (winners, gradient), axes=tuple(axes), extents=tuple(extents)
        )

    def lane_select(self, values: Any, winners: Any, axes: tuple[int, ...] = (0,)) -> Any:
        """Each entry of the winning lane of `values`."""
        return self.apply("lane_select", (values, winners), axes=tuple(axes))

    def gather(self, operand: Any, axis: int, indices: tuple[int, ...]) -> Any:
        """Picks the entries at `indices` along one axis."""
        return self.apply("gather", (operand,), axis=axis, indices=tuple(indices))

    def scatter(self, operand: Any, axis: int, indices: tuple[int, ...], length: int) -> Any:
        """The adjoint of `gather`: adds each entry back at its index along one axis."""
        return self.apply("scatter", (operand,), axis=axis, indices=tuple(indices), length=length)

    def reduce_to(self, contribution: Any, shape: Shape) -> Any:
        """Sums a contribution down to a rank-0 operand's shape when it was broadcast."""
        if shape.rank == 0 and self.shape(contribution).rank != 0:
            return self.sum(contribution)
        return contribution

"""SliceGradients: the gradients a node receives through narrows of it, held until read.

A narrow's adjoint pads its gradient with zeros back to its operand's shape, and the
sweep adds the padded contributions up. When several narrows cut one operand apart (a
recurrent cell's gates from one product, a sequence's steps from one projection), that
is a zero-filled buffer per slice and an addition per slice after the first, each of
the operand's full size, to build what is only the slices side by side. So the sweep
holds a narrow's contribution as the slice it fills, and when the operand's gradient
is read:

- slices along one axis that tile it exactly (no gap, no overlap) become their
  concatenation, in order, pairwise (a balanced tree of binary `concat`s);
- anything else becomes what the sweep computed before: each slice padded and the
  padded slices added in the order they arrived.

Both give the same numbers: outside its slice a padded contribution is zeros, and
adding an exact zero changes no sum, except that `-0.0 + 0.0` is `+0.0`, so a gradient
element that is a negative zero keeps its sign in the concatenation. Every route runs
this sweep, so every route computes the same kernels either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from topos.autodiff.algebra import Algebra


@dataclass
class SliceGradients:
    """Gradients of slices of one operand along `axis` of extent `size`: each a
    (start, gradient) pair, in the order they arrived."""

    axis: int
    size: int
    rank: int
    slices: list[tuple[int, Any]] = field(default_factory=list)

    def accepts(self, axis: int, size: int) -> bool:
        """Whether a slice along `axis` of an extent `size` joins these."""
        return axis == self.axis and size == self.size

    def assemble(self, algebra: Algebra) -> Any:
        """The operand's gradient: the slices concatenated where they tile the axis,
        else padded and added in arrival order."""
        ordered = sorted(self.slices, key=lambda pair: pair[0])
        if _tiles(algebra, ordered, self.axis, self.size):
            return _concatenated(algebra, [gradient for _, gradient in ordered], self.axis)
        total = None
        for start, gradient in self.slices:
            padded = self._padded(algebra, start, gradient)
            total = padded if total is None else algebra.add(total, padded)
        return total

    def _padded(self, algebra: Algebra, start: int, gradient: Any) -> Any:
        """The slice's gradient with zeros around it along the axis (narrow's adjoint)."""
        length = algebra.shape(gradient)[self.axis]
        widths = tuple(
            (start, self.size - start - length) if position == self.axis else (0, 0)
            for position in range(self.rank)
        )
        return algebra.pad(gradient, widths=widths)


def _tiles(algebra: Algebra, ordered: list[tuple[int, Any]], axis: int, size: int) -> bool:
    """Whether slices sorted by start cover `0..size` along `axis` with no gap or overlap."""
    reached = 0
    for start, gradient in ordered:
        if start != reached:
            return False
        reached = start + algebra.shape(gradient)[axis]
    return reached == size


def _concatenated(algebra: Algebra, gradients: list[Any], axis: int) -> Any:
    """The gradients joined along `axis` in order, halves first: each element is copied
    about log2(n) times, where folding from the left would copy the first n - 1 times."""
    if len(gradients) == 1:
        return gradients[0]
    middle = len(gradients) // 2
    return algebra.concat(
        _concatenated(algebra, gradients[:middle], axis),
        _concatenated(algebra, gradients[middle:], axis),
        axis=axis,
    )

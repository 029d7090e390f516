"""Layouts: which kernels return views, and the memory order of every buffer, from shapes alone.

A layout is the order of a buffer's axes in memory, outermost first (the identity
order is C-contiguous), or None for a view that does not cover its memory densely
(a slice, a sliding window, a broadcast). The memory plan lays each slot out in
the order the kernel would have produced by itself, so the kernels run over the
same layouts with or without the arena; no kernel's bits depend on a layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from topos.ops.primitive import VIEW_ALWAYS, VIEW_WHEN_CONTIGUOUS, Primitive
from topos.tensor import Shape

Layout = tuple[int, ...] | None

# Elementwise kernels write their output in the order of a full-size dense operand.
_ELEMENTWISE = frozenset(
    ("add", "sub", "mul", "div", "maximum", "neg", "exp", "ln", "sqrt", "tanh", "relu", "heaviside")
)
# These follow their first operand's order (their lanes are planes in its memory order).
_FOLLOW_FIRST = frozenset(("max_pool", "max_pool_route"))


def identity(rank: int) -> tuple[int, ...]:
    """The C-contiguous order of a rank-`rank` buffer."""
    return tuple(range(rank))


def is_view(primitive: Primitive, operand_layouts: Sequence[Layout]) -> bool:
    """Whether the kernel, called without `out`, returns a view of its first operand."""
    if primitive.view == VIEW_ALWAYS:
        return True
    if primitive.view == VIEW_WHEN_CONTIGUOUS:
        first = operand_layouts[0]
        return first is not None and first == identity(len(first))
    return False


def output_layout(
    primitive: Primitive,
    operand_layouts: Sequence[Layout],
    operand_shapes: Sequence[Shape],
    output: Shape,
    attributes: dict[str, Any],
) -> Layout:
    """The memory order of the kernel's output (of its view, when it returns one)."""
    name = primitive.name
    rank = output.rank
    if name == "permute":
        first = operand_layouts[0]
        if first is None:
            return None
        axes = list(attributes["axes"])
        return tuple(axes.index(axis) for axis in first)
    if primitive.view == VIEW_ALWAYS:
        return None
    if primitive.output_in_workspace:
        # col2im: the interior of a padded channels-last accumulator.
        return (0, 2, 3, 1) if attributes.get("padding", 0) == 0 else None
    if name in _ELEMENTWISE:
        for layout, shape in zip(operand_layouts, operand_shapes):
            if layout is not None and shape == output:
                return layout
        return identity(rank)
    if name in _FOLLOW_FIRST and operand_layouts[0] is not None and operand_shapes[0].rank == rank:
        return operand_layouts[0]
    return identity(rank)

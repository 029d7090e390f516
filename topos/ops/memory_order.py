"""Memory order: the layout of a kernel's output, from its operands' layouts and shapes alone.

A layout is the order of a buffer's axes in memory, outermost first (the identity
order is C-contiguous), or None for a view that does not cover its memory densely
(a slice, a sliding window, a broadcast). Each primitive declares at registration
the rule its kernel follows (`MemoryRules.layout`, one of the rules below or its own),
and the memory plan lays each slot out in that order, so the kernels run over the
same layouts with or without the arena; no kernel's bits depend on a layout.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from topos.tensor import Shape

Layout = tuple[int, ...] | None

#: `rule(operand_layouts, operand_shapes, output_shape, attributes)`: the output's layout.
LayoutRule = Callable[[Sequence[Layout], Sequence[Shape], Shape, Mapping[str, Any]], Layout]


def identity(rank: int) -> tuple[int, ...]:
    """The C-contiguous order of a rank-`rank` buffer."""
    return tuple(range(rank))


def contiguous(
    operand_layouts: Sequence[Layout],
    operand_shapes: Sequence[Shape],
    output: Shape,
    attributes: Mapping[str, Any],
) -> Layout:
    """The kernel writes a C-contiguous output (the rule of most kernels)."""
    return identity(output.rank)


def strided_view(
    operand_layouts: Sequence[Layout],
    operand_shapes: Sequence[Shape],
    output: Shape,
    attributes: Mapping[str, Any],
) -> Layout:
    """The kernel returns a view that need not cover its memory densely."""
    return None


def follows_dense_operand(
    operand_layouts: Sequence[Layout],
    operand_shapes: Sequence[Shape],
    output: Shape,
    attributes: Mapping[str, Any],
) -> Layout:
    """Elementwise kernels write in the order of the first full-size dense operand."""
    for layout, shape in zip(operand_layouts, operand_shapes):
        if layout is not None and shape == output:
            return layout
    return identity(output.rank)


def follows_first(
    operand_layouts: Sequence[Layout],
    operand_shapes: Sequence[Shape],
    output: Shape,
    attributes: Mapping[str, Any],
) -> Layout:
    """The order of the first operand when it is dense and of the output's rank (pooling:
    its lanes are planes in the operand's memory order), else C-contiguous."""
    first = operand_layouts[0]
    if first is not None and operand_shapes[0].rank == output.rank:
        return first
    return identity(output.rank)

"""Sweep simulation: the engine's backward sweep run on shapes alone, to predict its peak bytes.

`ShapeAlgebra.apply` runs each primitive's shape rule instead of its kernel and
hands back a `ShapeOperand`. Each operand that is not a view holds a `Storage`
whose bytes count as live until Python drops the last reference to it; a view
holds its base's storage, as a NumPy view holds its base. The sweep is the very
function the engine runs (`chain_rule.sweep`), with the same references kept and
dropped in the same order, so the simulated live bytes follow the real ones. A
kernel's own temporaries (its workspace) count at the moment it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from topos.engine.layouts import Layout, identity, is_view, output_layout
from topos.graph.chain_rule import Schedule, sweep
from topos.ops.algebra import Algebra
from topos.ops.primitive import REGISTRY
from topos.tensor import Shape


class Ledger:
    """The bytes live now and the most ever live at once."""

    def __init__(self) -> None:
        self.live = 0
        self.peak = 0

    def allocate(self, size: int, transient: int = 0) -> None:
        """Counts `size` bytes live from now on, and `transient` more during one kernel."""
        self.peak = max(self.peak, self.live + size + transient)
        self.live += size


class Storage:
    """Bytes counted in a ledger until the last operand holding them goes away."""

    __slots__ = ("ledger", "size")

    def __init__(self, ledger: Ledger, size: int, transient: int = 0) -> None:
        self.ledger = ledger
        self.size = size
        ledger.allocate(size, transient)

    def __del__(self) -> None:
        self.ledger.live -= self.size


class ShapeOperand:
    """A shape standing in for an array: its layout, and the storage it keeps alive."""

    __slots__ = ("layout", "shape", "storage")

    def __init__(self, shape: Shape, layout: Layout, storage: Storage | None) -> None:
        self.shape = shape
        self.layout = layout
        self.storage = storage


class ShapeAlgebra(Algebra):
    """Operands are `ShapeOperand`s; `apply` runs the shape rule and counts the bytes."""

    def __init__(self, itemsize: int) -> None:
        self.itemsize = itemsize
        self.ledger = Ledger()

    def apply(self, operation: str, operands: Sequence[Any], **attributes: Any) -> ShapeOperand:
        """The result's shape and layout; new storage unless the kernel returns a view."""
        primitive = REGISTRY[operation]
        shapes = [operand.shape for operand in operands]
        shape = primitive.infer(*shapes, **attributes)
        layouts = [operand.layout for operand in operands]
        layout = output_layout(primitive, layouts, shapes, shape, attributes)
        if is_view(primitive, layouts):
            return ShapeOperand(shape, layout, operands[0].storage)
        workspace = 0
        if primitive.workspace is not None:
            workspace = int(primitive.workspace(*shapes, **attributes)) * self.itemsize
        size = shape.volume * self.itemsize
        if primitive.output_in_workspace:
            size, workspace = max(size, workspace), 0
        if layout is None and not primitive.output_in_workspace:
            layout = identity(shape.rank)
        return ShapeOperand(shape, layout, Storage(self.ledger, size, workspace))

    def shape(self, operand: ShapeOperand) -> Shape:
        """The operand's shape."""
        return operand.shape

    def constant(self, value: float, shape: Shape) -> ShapeOperand:
        """A filled array of `shape`: new storage."""
        storage = Storage(self.ledger, shape.volume * self.itemsize)
        return ShapeOperand(shape, identity(shape.rank), storage)


def backward_peak_bytes(
    nodes: Sequence,
    schedule: Schedule,
    target: int,
    wrt: Sequence[int],
    layouts: dict[int, Layout],
    itemsize: int,
) -> int:
    """The most bytes the engine's eager sweep holds at once beyond the forward buffers
    (which the plan already counts), the parameters' gradients included."""
    algebra = ShapeAlgebra(itemsize)
    forward = {
        index: ShapeOperand(nodes[index].shape, layouts.get(index), None) for index in layouts
    }
    seed = algebra.constant(1.0, nodes[target].shape)
    gradients = sweep(nodes, schedule, target, wrt, algebra, forward.__getitem__, seed)
    del seed, gradients
    return algebra.ledger.peak

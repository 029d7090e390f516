"""ShapeAlgebra: runs derivative rules on shapes and memory orders alone, recording each call.

`apply` runs the primitive's shape rule instead of its kernel, asks the primitive
whether its kernel would return a view and in which order it would write, and
hands back a `ShapeOperand`. An operand that is not a view names the `Storage`
its call made; a view names its base's, as a NumPy view holds its base. Every call
is recorded in order (`SimulatedCall`) with the storages it reads, so how long
each storage is needed follows from the calls themselves (`engine.sweep_simulation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from topos.autodiff.algebra import Algebra
from topos.ops.memory_order import Layout, identity
from topos.ops.primitive import REGISTRY
from topos.tensor import Shape


@dataclass(frozen=True)
class Storage:
    """Bytes a call (or a constant) makes: `number` in order of making, the call that
    made it (None for a constant), its size, and the first call it is live for."""

    number: int
    call: int | None
    size: int
    born: int


@dataclass(frozen=True)
class ShapeOperand:
    """A shape standing in for an array: its layout, and the storage it reads (None for a
    buffer of the forward pass)."""

    shape: Shape
    layout: Layout
    storage: Storage | None


@dataclass(frozen=True)
class SimulatedCall:
    """One `apply` call of the sweep, as shapes: what the kernel gets and makes.

    `size` is the output's bytes (when `output_in_workspace`, the workspace that
    holds it); `workspace` the bytes of scratch the kernel uses during the call
    (then its `scratch`, passed as `scratch=`);
    a `view` call makes no storage. `reads` are the numbers of the storages its
    operands are (or are views of); `operand_storages` says it operand by operand (None
    for a buffer of the forward pass), beside each operand's layout.
    """

    operation: str
    operand_shapes: tuple[tuple[int, ...], ...]
    attributes: dict[str, Any]
    shape: tuple[int, ...]
    layout: Layout
    view: bool
    size: int
    workspace: int
    output_in_workspace: bool
    reads: tuple[int, ...]
    operand_storages: tuple[int | None, ...] = ()
    operand_layouts: tuple[Layout, ...] = ()


class ShapeAlgebra(Algebra):
    """Operands are `ShapeOperand`s; `apply` runs the shape rule and records the call
    (`calls`) and any storage it makes (`storages`), sized in `itemsize`-byte elements."""

    def __init__(self, itemsize: int) -> None:
        self.itemsize = itemsize
        self.calls: list[SimulatedCall] = []
        self.storages: list[Storage] = []

    def _storage(self, size: int, call: int | None) -> Storage:
        # Live from the call that makes it; a constant, from the next call on.
        born = len(self.calls) if call is None else call
        storage = Storage(len(self.storages), call, size, born)
        self.storages.append(storage)
        return storage

    def apply(self, operation: str, operands: Sequence[Any], **attributes: Any) -> ShapeOperand:
        """The result's shape and layout; new storage unless the kernel returns a view."""
        primitive = REGISTRY[operation]
        position = len(self.calls)
        shapes = [operand.shape for operand in operands]
        shape = primitive.infer(*shapes, **attributes)
        layouts = [operand.layout for operand in operands]
        layout = primitive.memory.output_layout(layouts, shapes, shape, attributes)
        read = dict.fromkeys(
            operand.storage.number for operand in operands if operand.storage is not None
        )
        view = primitive.memory.returns_view(layouts, attributes)
        size = workspace = 0
        if not view:
            elements = primitive.memory.workspace_elements(shapes, layouts, attributes)
            workspace = elements * self.itemsize
            size = shape.volume * self.itemsize
            if primitive.memory.output_in_workspace:
                # The workspace holds the output; only the scratch is the call's own.
                scratch = primitive.memory.scratch
                size = max(size, workspace)
                workspace = 0 if scratch is None else int(scratch(*shapes, **attributes))
                workspace *= self.itemsize
            elif layout is None:
                layout = identity(shape.rank)
        self.calls.append(
            SimulatedCall(
                operation,
                tuple(tuple(operand) for operand in shapes),
                dict(attributes),
                tuple(shape),
                layout,
                view,
                size,
                workspace,
                primitive.memory.output_in_workspace and not view,
                tuple(read),
                tuple(
                    None if operand.storage is None else operand.storage.number
                    for operand in operands
                ),
                tuple(layouts),
            )
        )
        storage = operands[0].storage if view else self._storage(size, position)
        return ShapeOperand(shape, layout, storage)

    def shape(self, operand: ShapeOperand) -> Shape:
        """The operand's shape."""
        return operand.shape

    def constant(self, value: float, shape: Shape) -> ShapeOperand:
        """A filled array of `shape`: new storage."""
        storage = self._storage(shape.volume * self.itemsize, None)
        return ShapeOperand(shape, identity(shape.rank), storage)

"""Sweep simulation: the engine's backward sweep run on shapes alone, to plan its memory.

`ShapeAlgebra.apply` runs each primitive's shape rule instead of its kernel and
hands back a `ShapeOperand`. Each operand that is not a view holds a `Storage`
whose bytes count as live until Python drops the last reference to it; a view
holds its base's storage, as a NumPy view holds its base. The sweep is the very
function the engine runs (`chain_rule.sweep`), with the same references kept and
dropped in the same order, so the simulated live bytes follow the real ones. A
kernel's own temporaries (its workspace) count at the moment it runs.

The simulation also records every `apply` call in order (`SimulatedCall`) and, for
each call's new storage, the last call during which the sweep still held it and
whether it outlives the sweep (a returned gradient): what the backward plan needs
to give each call an arena slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from topos.graph.chain_rule import Schedule, sweep
from topos.ops.algebra import Algebra
from topos.ops.memory_order import Layout, identity
from topos.ops.primitive import REGISTRY
from topos.tensor import Shape


class Ledger:
    """The bytes live now and the most ever live at once; and, per `apply` call, the
    last call during which that call's storage was still held (`deaths`)."""

    def __init__(self) -> None:
        self.live = 0
        self.peak = 0
        # The position of the latest `apply` call (-1 before the first).
        self.clock = -1
        self.deaths: dict[int, int] = {}

    def allocate(self, size: int, transient: int = 0) -> None:
        """Counts `size` bytes live from now on, and `transient` more during one kernel."""
        self.peak = max(self.peak, self.live + size + transient)
        self.live += size


class Storage:
    """Bytes counted in a ledger until the last operand holding them goes away."""

    __slots__ = ("call", "ledger", "size")

    def __init__(
        self, ledger: Ledger, size: int, transient: int = 0, call: int | None = None
    ) -> None:
        self.ledger = ledger
        self.size = size
        # The `apply` call that made this storage (None for a constant).
        self.call = call
        ledger.allocate(size, transient)

    def __del__(self) -> None:
        ledger = self.ledger
        ledger.live -= self.size
        if self.call is not None:
            # Dropped after call `clock` started: no later call can read it.
            ledger.deaths[self.call] = ledger.clock


class ShapeOperand:
    """A shape standing in for an array: its layout, and the storage it keeps alive."""

    __slots__ = ("layout", "shape", "storage")

    def __init__(self, shape: Shape, layout: Layout, storage: Storage | None) -> None:
        self.shape = shape
        self.layout = layout
        self.storage = storage


@dataclass(frozen=True)
class SimulatedCall:
    """One `apply` call of the sweep, as shapes: what the kernel gets and makes.

    `size` is the output's bytes (when `output_in_workspace`, the workspace that
    holds it); `workspace` the bytes of scratch the kernel uses during the call;
    a `view` call makes no storage.
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


@dataclass
class SweepSimulation:
    """The sweep on shapes: its calls in order, the last call each call's storage is
    held for, the calls whose storage outlives the sweep, and the peak bytes."""

    calls: list[SimulatedCall]
    deaths: dict[int, int]
    escaped: set[int] = field(default_factory=set)
    peak: int = 0


class ShapeAlgebra(Algebra):
    """Operands are `ShapeOperand`s; `apply` runs the shape rule, counts the bytes and
    records the call."""

    def __init__(self, itemsize: int) -> None:
        self.itemsize = itemsize
        self.ledger = Ledger()
        self.calls: list[SimulatedCall] = []

    def apply(self, operation: str, operands: Sequence[Any], **attributes: Any) -> ShapeOperand:
        """The result's shape and layout; new storage unless the kernel returns a view."""
        primitive = REGISTRY[operation]
        ledger = self.ledger
        ledger.clock += 1
        shapes = [operand.shape for operand in operands]
        shape = primitive.infer(*shapes, **attributes)
        layouts = [operand.layout for operand in operands]
        layout = primitive.output_layout(layouts, shapes, shape, attributes)
        operand_shapes = tuple(tuple(operand) for operand in shapes)
        if primitive.returns_view(layouts):
            self.calls.append(
                SimulatedCall(
                    operation,
                    operand_shapes,
                    dict(attributes),
                    tuple(shape),
                    layout,
                    True,
                    0,
                    0,
                    False,
                )
            )
            return ShapeOperand(shape, layout, operands[0].storage)
        workspace = 0
        if primitive.workspace is not None:
            workspace = int(primitive.workspace(*shapes, **attributes)) * self.itemsize
        size = shape.volume * self.itemsize
        if primitive.output_in_workspace:
            size, workspace = max(size, workspace), 0
        if layout is None and not primitive.output_in_workspace:
            layout = identity(shape.rank)
        self.calls.append(
            SimulatedCall(
                operation,
                operand_shapes,
                dict(attributes),
                tuple(shape),
                layout,
                False,
                size,
                workspace,
                primitive.output_in_workspace,
            )
        )
        storage = Storage(ledger, size, workspace, call=ledger.clock)
        return ShapeOperand(shape, layout, storage)

    def shape(self, operand: ShapeOperand) -> Shape:
        """The operand's shape."""
        return operand.shape

    def constant(self, value: float, shape: Shape) -> ShapeOperand:
        """A filled array of `shape`: new storage."""
        storage = Storage(self.ledger, shape.volume * self.itemsize)
        return ShapeOperand(shape, identity(shape.rank), storage)


def simulate_sweep(
    nodes: Sequence,
    schedule: Schedule,
    target: int,
    wrt: Sequence[int],
    layouts: dict[int, Layout],
    itemsize: int,
) -> SweepSimulation:
    """Runs the engine's sweep on shapes: every call it makes, how long each call's
    storage is held, which storages it returns, and its peak bytes beyond the forward
    buffers (the parameters' gradients included)."""
    algebra = ShapeAlgebra(itemsize)
    forward = {
        index: ShapeOperand(nodes[index].shape, layouts.get(index), None) for index in layouts
    }
    seed = algebra.constant(1.0, nodes[target].shape)
    gradients = sweep(nodes, schedule, target, wrt, algebra, forward.__getitem__, seed)
    escaped = {
        operand.storage.call
        for operand in gradients.values()
        if operand.storage is not None and operand.storage.call is not None
    }
    # Whatever is still held dies now, at the last call.
    del seed, gradients
    ledger = algebra.ledger
    return SweepSimulation(algebra.calls, dict(ledger.deaths), escaped, ledger.peak)

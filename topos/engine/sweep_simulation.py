"""Sweep simulation: the engine's backward sweep run on shapes alone, to plan its memory.

The sweep is the very function the engine runs (`autodiff.chain_rule.sweep`), with
the shape algebra, which records every call in order and the storages each call
reads. A storage is needed from the call that makes it to the last call that reads
it (directly or through a view), or to the end of the sweep when the sweep returns
it (a parameter's gradient); past its last read no kernel looks at its bytes, so
another call's output may take them. A kernel's own temporaries (its workspace)
count during that call only.

As in the forward memory plan, a call may *take over* the storage of an operand its
primitive `overwrites` (an elementwise kernel) when that operand is a storage of the
sweep's own, of the output's shape and memory order, read by nothing after this call
and not returned: the kernel writes over the operand it reads, element for element
(relu's rule multiplies the gradient into the mask it has just made), so the two cost
one slot and the output lands on bytes the call has just read, still in cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from topos.autodiff.chain_rule import Schedule, sweep
from topos.autodiff.shape_algebra import ShapeAlgebra, ShapeOperand, SimulatedCall, Storage
from topos.ops.memory_order import Layout
from topos.ops.primitive import REGISTRY


@dataclass
class SweepSimulation:
    """The sweep on shapes: its calls in order, the last call each call's storage is
    needed for (`deaths`), the calls whose storage outlives the sweep, the peak bytes,
    and each call that takes over an earlier call's storage, with that call
    (`taken_over`, see the module)."""

    calls: list[SimulatedCall]
    deaths: dict[int, int]
    escaped: set[int] = field(default_factory=set)
    peak: int = 0
    taken_over: dict[int, int] = field(default_factory=dict)


def last_uses(
    calls: Sequence[SimulatedCall], storages: Sequence[Storage], kept: set[int]
) -> dict[int, int]:
    """By storage number, the last call that needs it: the last that reads it, or its
    first call when none does; the storages in `kept` live to the last call."""
    last = len(calls) - 1
    ends = {storage.number: storage.born for storage in storages}
    for position, call in enumerate(calls):
        for number in call.reads:
            ends[number] = position
    for number in kept:
        ends[number] = max(last, ends[number])
    return ends


def takeovers(
    calls: Sequence[SimulatedCall],
    storages: Sequence[Storage],
    ends: dict[int, int],
    returned: set[int],
) -> dict[int, int]:
    """Each call that takes over the storage of an operand, with the call that made that
    storage (see the module)."""
    made = {storage.call: storage.number for storage in storages if storage.call is not None}
    taken: dict[int, int] = {}
    for position, call in enumerate(calls):
        if call.view or call.output_in_workspace or made.get(position) in returned:
            continue
        for operand in REGISTRY[call.operation].memory.overwrites:
            number = call.operand_storages[operand]
            if number is None or number in returned or ends[number] != position:
                continue
            maker = storages[number].call
            if maker is None or calls[maker].output_in_workspace:
                continue  # a constant, or an output inside its maker's workspace
            if call.operand_storages.count(number) > 1:
                continue  # read again by another operand, perhaps in another order
            if not (
                call.operand_shapes[operand] == calls[maker].shape == call.shape
                and call.operand_layouts[operand] == calls[maker].layout == call.layout
            ):
                continue
            taken[position] = maker
            break
    return taken


def peak_bytes(
    calls: Sequence[SimulatedCall],
    storages: Sequence[Storage],
    ends: dict[int, int],
    taken_over: dict[int, int] | None = None,
) -> int:
    """The most bytes live during one call: the storages it falls within, and its
    workspace (an output that takes over its operand's storage adds nothing at its call,
    where that storage dies)."""
    taking = set(taken_over or ())
    peak = sum(storage.size for storage in storages if storage.born >= len(calls))
    for position, call in enumerate(calls):
        live = sum(
            storage.size
            for storage in storages
            if storage.born <= position <= ends[storage.number]
            and not (storage.born == position and storage.call in taking)
        )
        peak = max(peak, live + call.workspace)
    return peak


def simulate_sweep(
    nodes: Sequence,
    schedule: Schedule,
    target: int,
    wrt: Sequence[int],
    layouts: dict[int, Layout],
    itemsize: int,
) -> SweepSimulation:
    """Runs the engine's sweep on shapes: every call it makes, how long each call's
    storage is needed, which storages it returns, and its peak bytes beyond the forward
    buffers (the parameters' gradients included)."""
    algebra = ShapeAlgebra(itemsize)
    forward = {
        index: ShapeOperand(nodes[index].shape, layouts.get(index), None) for index in layouts
    }
    seed = algebra.constant(1.0, nodes[target].shape)
    gradients = sweep(nodes, schedule, target, wrt, algebra, forward.__getitem__, seed)
    returned = {
        operand.storage.number for operand in gradients.values() if operand.storage is not None
    }
    ends = last_uses(algebra.calls, algebra.storages, returned)
    storages = algebra.storages
    deaths = {
        storage.call: ends[storage.number] for storage in storages if storage.call is not None
    }
    escaped = {storages[number].call for number in returned if storages[number].call is not None}
    taken_over = takeovers(algebra.calls, storages, ends, returned)
    return SweepSimulation(
        algebra.calls,
        deaths,
        escaped,
        peak_bytes(algebra.calls, storages, ends, taken_over),
        taken_over,
    )

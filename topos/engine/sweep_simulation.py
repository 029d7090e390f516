"""Sweep simulation: the engine's backward sweep run on shapes alone, to plan its memory.

The sweep is the very function the engine runs (`autodiff.chain_rule.sweep`), with
the shape algebra, which records every call in order and the storages each call
reads. A storage is needed from the call that makes it to the last call that reads
it (directly or through a view), or to the end of the sweep when the sweep returns
it (a parameter's gradient); past its last read no kernel looks at its bytes, so
another call's output may take them. A kernel's own temporaries (its workspace)
count during that call only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from topos.autodiff.chain_rule import Schedule, sweep
from topos.autodiff.shape_algebra import ShapeAlgebra, ShapeOperand, SimulatedCall, Storage
from topos.ops.memory_order import Layout


@dataclass
class SweepSimulation:
    """The sweep on shapes: its calls in order, the last call each call's storage is
    needed for (`deaths`), the calls whose storage outlives the sweep, and the peak
    bytes."""

    calls: list[SimulatedCall]
    deaths: dict[int, int]
    escaped: set[int] = field(default_factory=set)
    peak: int = 0


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


def peak_bytes(
    calls: Sequence[SimulatedCall], storages: Sequence[Storage], ends: dict[int, int]
) -> int:
    """The most bytes live during one call: the storages it falls within, and its workspace."""
    peak = sum(storage.size for storage in storages if storage.born >= len(calls))
    for position, call in enumerate(calls):
        live = sum(
            storage.size for storage in storages if storage.born <= position <= ends[storage.number]
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
    return SweepSimulation(
        algebra.calls, deaths, escaped, peak_bytes(algebra.calls, storages, ends)
    )

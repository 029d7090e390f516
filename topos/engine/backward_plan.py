"""BackwardPlan: the static memory plan of the engine's eager sweep from one target.

The sweep is deterministic for a plan and a target: its k-th `apply` call always
has the same primitive, attributes and operand shapes. So the sweep is simulated
once on shapes (`simulate_sweep`), which tells every call's output shape, layout,
workspace and how long the sweep needs the output (to the last call that reads
it). Every call that makes storage gets a slot in a backward arena, placed
by the same first fit as the forward arena (`arena.place`), except the storage the
sweep returns (the parameters' gradients, which become parameters and outlive the
run): that call writes into a buffer allocated afresh every sweep. Views get no slot.

Every call the simulation says makes storage is handed that storage as `out=`,
never left to choose: a kernel called without `out` decides from the operand's
real strides whether to return a view (NumPy calls an array contiguous whatever the
strides of its extent-1 axes), and a view the simulation did not foresee would tie
a returned gradient to a slot that later calls write.

At run time `calls()` hands the eager algebra one entry per call: the kernel with
its attributes and its `out=`/`workspace=` slot views bound. The arena is separate
from the forward one because the retain posture keeps every forward buffer alive
through the sweep, so nothing could share with it anyway. An output that takes over
an operand's storage (see `sweep_simulation`) gets that operand's slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from topos.autodiff.chain_rule import Schedule
from topos.autodiff.shape_algebra import SimulatedCall
from topos.engine.arena import Arena, Interval, aligned, place, slot_view
from topos.engine.fresh_block import FreshBlock, allocation_sizes
from topos.engine.sweep_simulation import SweepSimulation, simulate_sweep
from topos.ops.memory_order import Layout
from topos.ops.primitive import REGISTRY

#: The keys of a call's output and workspace among the backward arena's intervals.
OUTPUT = "output"
WORKSPACE = "workspace"
SCRATCH = "scratch"

#: One call as the eager algebra checks and runs it: the operation, the operand
#: shapes and attributes it was simulated with, and the kernel with its slots bound.
PlannedCall = tuple[str, tuple[tuple[int, ...], ...], dict[str, Any], Any]


@dataclass(frozen=True)
class BackwardSlot:
    """A call's place in the backward arena: byte offset, first and last call it is
    live for, shape, memory order (None for a flat workspace) and size in bytes."""

    offset: int
    start: int
    end: int
    shape: tuple[int, ...]
    order: tuple[int, ...]
    size: int


class BackwardPlan:
    """Slots for every call of the engine's sweep from one target (see the module)."""

    def __init__(self, simulation: SweepSimulation, dtype: np.dtype) -> None:
        self.dtype = np.dtype(dtype)
        self.simulation = simulation
        itemsize = self.dtype.itemsize
        calls = simulation.calls
        last = len(calls) - 1
        taken_over = simulation.taken_over
        # A chain of takeovers is one slot, from its first call to its last one's death.
        first: dict[int, int] = {}
        for position, maker in sorted(taken_over.items()):
            first[position] = first.get(maker, maker)
        chain_end: dict[int, int] = {}
        for position, owner in first.items():
            end = simulation.deaths.get(position, last)
            chain_end[owner] = max(chain_end.get(owner, owner), end)
        intervals: list[Interval] = []
        fresh: list[int] = []
        for position, call in enumerate(calls):
            if call.view:
                continue
            end = simulation.deaths.get(position, last)
            if position in simulation.escaped:
                # Returned to the caller: allocated afresh by the kernel every sweep.
                fresh.append(position)
            elif position not in first:
                end = max(end, chain_end.get(position, end))
                intervals.append(Interval((OUTPUT, position), position, end, call.size))
            if call.workspace:
                # Scratch beside a workspace that holds the output, or the workspace.
                kind = SCRATCH if call.output_in_workspace else WORKSPACE
                intervals.append(Interval((kind, position), position, position, call.workspace))
        offsets, self.arena_bytes = place(intervals)
        self.outputs: dict[int, BackwardSlot] = {}
        self.workspaces: dict[int, BackwardSlot] = {}
        self.scratches: dict[int, BackwardSlot] = {}
        for interval in intervals:
            kind, position = interval.key
            call = calls[position]
            offset = offsets[interval.key]
            if kind == OUTPUT and not call.output_in_workspace:
                # The slot lives as long as its own output; the chain taking it over
                # gets its bytes below.
                end = simulation.deaths.get(position, last)
                slot = BackwardSlot(offset, interval.start, end, call.shape, call.layout, call.size)
                self.outputs[position] = slot
            else:
                # A workspace (one that holds the call's output too), or a scratch: flat.
                elements = (interval.size // itemsize,)
                slot = BackwardSlot(
                    offset, interval.start, interval.end, elements, (0,), interval.size
                )
                (self.scratches if kind == SCRATCH else self.workspaces)[position] = slot
        for position, owner in sorted(first.items()):
            call = calls[position]
            self.outputs[position] = BackwardSlot(
                self.outputs[owner].offset,
                position,
                simulation.deaths.get(position, last),
                call.shape,
                call.layout,
                call.size,
            )
        #: Each call whose output takes over an earlier call's slot, with that call.
        self.taken_over = dict(taken_over)
        self.fresh = tuple(fresh)
        self.fresh_bytes = sum(aligned(calls[position].size) for position in fresh)
        # The returned gradients a kernel writes straight into: fresh every sweep, the
        # small ones in one block (a gradient held in a workspace is copied out instead).
        self._fresh_block = FreshBlock(
            {
                position: (calls[position].shape, calls[position].layout)
                for position in fresh
                if not calls[position].output_in_workspace
            },
            self.dtype,
        )
        self._arena: Arena | None = None
        self._calls: list[PlannedCall] | None = None
        # Sweeps that left the simulated path (and so allocated afresh from there on).
        self.misses = 0

    @property
    def predicted_bytes(self) -> int:
        """What the sweep holds at its peak beyond the forward buffers: the backward
        arena and the fresh buffers of the gradients it returns."""
        return self.arena_bytes + self.fresh_bytes

    @property
    def fresh_allocations(self) -> list[int]:
        """The allocations a sweep makes for the gradients it returns, in bytes: one block
        for the small ones, and each other its own (see `FreshBlock`)."""
        calls = self.simulation.calls
        into_block = [p for p in self.fresh if not calls[p].output_in_workspace]
        copied = [calls[p].size for p in self.fresh if calls[p].output_in_workspace]
        return allocation_sizes(calls[p].size for p in into_block) + copied

    def slots(self) -> list[BackwardSlot]:
        """Every slot of the backward arena: outputs, workspaces, scratches."""
        return [*self.outputs.values(), *self.workspaces.values(), *self.scratches.values()]

    def calls(self) -> list[PlannedCall]:
        """One entry per call of the sweep, slots bound (allocating the arena once); a
        sweep's returned gradients are its own (each call starts a sweep)."""
        self._fresh_block.renew()
        if self._calls is None:
            arena = Arena(self.arena_bytes)
            bound = []
            for position, call in enumerate(self.simulation.calls):
                bound.append(self._bind(arena.block, position, call))
            self._arena = arena
            self._calls = bound
        return self._calls

    def _bind(self, block: np.ndarray, position: int, call: SimulatedCall) -> PlannedCall:
        attributes = dict(call.attributes)
        output = self.outputs.get(position)
        if output is not None:
            attributes["out"] = slot_view(
                block, output.offset, output.shape, self.dtype, output.order
            )
        workspace = self.workspaces.get(position)
        if workspace is not None:
            attributes["workspace"] = slot_view(
                block, workspace.offset, workspace.shape, self.dtype, workspace.order
            )
        scratch = self.scratches.get(position)
        if scratch is not None:
            attributes["scratch"] = slot_view(
                block, scratch.offset, scratch.shape, self.dtype, scratch.order
            )
        kernel = REGISTRY[call.operation].kernel
        if attributes:
            kernel = partial(kernel, **attributes)
        if position in self.fresh and not call.output_in_workspace:
            kernel = partial(_into_fresh, kernel, self._fresh_block, position)
        return (call.operation, call.operand_shapes, call.attributes, kernel)

    @property
    def block(self) -> np.ndarray | None:
        """The arena's bytes while allocated (else None)."""
        return self._arena.block if self._arena is not None else None

    def release(self) -> None:
        """Frees the backward arena; the next sweep allocates it afresh."""
        self._arena = None
        self._calls = None


def _into_fresh(kernel, fresh_block: FreshBlock, position: int, *operands) -> np.ndarray:
    """Runs `kernel` into this sweep's fresh buffer for call `position`: storage the
    caller keeps, which no later call can write."""
    return kernel(*operands, out=fresh_block.buffer(position))


def plan_backward(
    nodes: Sequence,
    schedule: Schedule,
    target: int,
    wrt: Sequence[int],
    layouts: dict[int, Layout],
    dtype: np.dtype,
) -> BackwardPlan:
    """Simulates the sweep from `target` and places its buffers in a backward arena."""
    simulation = simulate_sweep(nodes, schedule, target, wrt, layouts, np.dtype(dtype).itemsize)
    return BackwardPlan(simulation, dtype)

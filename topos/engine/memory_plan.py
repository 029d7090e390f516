"""MemoryPlan: the static memory plan of a lowering — views, lifetimes, arena slots, roots.

Every evaluated node is one of:

- a *source* (parameter, input, leaf): the caller's or the network's array;
- a *view*: its kernel returns a view of its first operand, so it costs no bytes
  but keeps that operand's storage alive until the view's last consumer;
- a *root* that is computed: written into a fresh buffer every run, because the
  caller may keep it (a Tensor is immutable, and the next run reuses the arena);
- otherwise a *slot* in the arena, live from its node to the last consumer of
  itself or of any view of it (in the retain posture: to the end of the run).

Kernels with a workspace get a slot live only during their own step (or, when the
output lives in the workspace, for the output's whole lifetime: then the kernel's
`scratch`, which never holds the output, gets a slot of its own live only during
its step).

In the forward posture an output may *take over* the slot of an operand its primitive
`overwrites`, when that operand owns its slot, has the output's shape and memory order,
and is last read at this very step: the kernel then writes over the operand it reads,
element for element, and the two buffers cost one slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from topos.engine.arena import Interval, PlacementSearch, aligned
from topos.engine.liveness import LiveProfile, counted, last_consumers
from topos.ops.memory_order import Layout, identity

#: The key of a node's workspace among the arena's intervals (a node's own key is its index).
WORKSPACE = "workspace"
#: The key of a node's scratch (beside a workspace that holds its output).
SCRATCH = "scratch"


@dataclass(frozen=True)
class Slot:
    """Where a buffer lives in the arena: byte offset, shape and memory order."""

    offset: int
    shape: tuple[int, ...]
    order: tuple[int, ...]
    size: int


@dataclass(frozen=True)
class MemoryPlan:
    """What lowering decided about memory (see the module)."""

    views: frozenset[int]
    storage: dict[int, int]
    layouts: dict[int, Layout]
    fresh: frozenset[int]
    slots: dict[int, Slot]
    workspaces: dict[int, Slot]
    scratches: dict[int, Slot]
    storage_end: dict[int, int]
    releases: dict[int, int]
    arena_bytes: int
    root_bytes: int
    live: LiveProfile
    taken_over: dict[int, int]

    @property
    def sharing(self) -> int:
        """How many arena buffers share bytes with some other buffer."""
        spans = [(slot.offset, slot.offset + slot.size) for slot in self.all_slots()]
        shared = 0
        for position, (start, end) in enumerate(spans):
            if any(
                other_start < end and start < other_end
                for other_position, (other_start, other_end) in enumerate(spans)
                if other_position != position
            ):
                shared += 1
        return shared

    def all_slots(self) -> list[Slot]:
        """Every slot of the arena: node outputs, then workspaces, then scratches."""
        return [*self.slots.values(), *self.workspaces.values(), *self.scratches.values()]


def _workspace_elements(node, nodes, layouts) -> int:
    return node.primitive.memory.workspace_elements(
        [nodes[i].shape for i in node.inputs],
        [layouts[i] for i in node.inputs],
        node.attributes,
    )


def scratch_elements(node, nodes) -> int:
    """The elements of a node's scratch (see `Primitive`): 0 when it has none."""
    rule = node.primitive.memory.scratch
    return (
        0 if rule is None else int(rule(*(nodes[i].shape for i in node.inputs), **node.attributes))
    )


def plan_memory(
    nodes: Sequence,
    evaluated: Sequence[int],
    roots: Sequence[int],
    posture: str,
    dtype,
    budget: int | None = None,
) -> MemoryPlan:
    """Decides views, lifetimes and arena offsets for one lowering. With a `budget`
    (bytes of arena and roots), the arena's placement searches no further once the
    plan fits it."""
    return MemoryPlanner(nodes, evaluated, roots, posture, dtype).plan(budget)


class MemoryPlanner:
    """The memory plans of one program: what they decide whatever the budget (views,
    lifetimes, the arena's intervals) is decided once, here, and `plan(budget)` places
    the intervals. A planner asked for several budgets keeps its placement search too
    (`PlacementSearch`), as a remat lowering does when it lays out one schedule under
    several budgets."""

    def __init__(
        self, nodes: Sequence, evaluated: Sequence[int], roots: Sequence[int], posture: str, dtype
    ) -> None:
        itemsize = np.dtype(dtype).itemsize
        root_set = set(roots)
        last = last_consumers(nodes, evaluated)
        finish = (evaluated[-1] + 1) if evaluated else 0
        layouts: dict[int, Layout] = {}
        storage: dict[int, int] = {}
        views: set[int] = set()
        fresh: set[int] = set()
        for index in evaluated:
            node = nodes[index]
            if node.is_source:
                layouts[index] = identity(node.shape.rank)
                storage[index] = index
                continue
            operand_layouts = [layouts[i] for i in node.inputs]
            if index in root_set:
                fresh.add(index)
                storage[index] = index
                layouts[index] = identity(node.shape.rank)
                continue
            shapes = [nodes[i].shape for i in node.inputs]
            layouts[index] = node.primitive.memory.output_layout(
                operand_layouts, shapes, node.shape, node.attributes
            )
            if node.primitive.memory.returns_view(operand_layouts, node.attributes):
                views.add(index)
                storage[index] = storage[node.inputs[0]]
            else:
                storage[index] = index
                if layouts[index] is None and not node.primitive.memory.output_in_workspace:
                    layouts[index] = identity(node.shape.rank)

        # A storage lives until the last use of itself or of any view of it.
        storage_end: dict[int, int] = {}
        for index in evaluated:
            owner = storage[index]
            use = last.get(index, index)
            storage_end[owner] = max(storage_end.get(owner, owner), use)
        for root in root_set:
            if root in storage:
                storage_end[storage[root]] = finish
        taken_over = (
            _takeovers(nodes, evaluated, storage, storage_end, layouts, views, fresh)
            if posture == "forward"
            else {}
        )
        # A chain of takeovers is one slot, from its first buffer to its last one's end.
        first: dict[int, int] = {}
        for index, operand in taken_over.items():
            first[index] = first.get(operand, operand)
        slot_end = {index: end for index, end in storage_end.items() if index not in first}
        for index, owner in first.items():
            slot_end[owner] = max(slot_end[owner], storage_end[index])
        # The forward posture's lifetimes give the live profile (the retain posture's
        # release floor) whichever posture this is.
        live = _profile(nodes, evaluated, views, first.keys(), slot_end)
        if posture == "retain":
            storage_end = dict.fromkeys(storage_end, finish)

        releases: dict[int, int] = {}
        if posture == "forward":
            for index in evaluated:
                if index in root_set:
                    continue
                if index in views:
                    releases[index] = last.get(index, index)
                elif storage_end[index] < finish:
                    releases[index] = storage_end[index]

        intervals: list[Interval] = []
        shapes_of: dict[object, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        for index in evaluated:
            node = nodes[index]
            if node.is_source:
                continue
            workspace = _workspace_elements(node, nodes, layouts) * itemsize
            scratch = scratch_elements(node, nodes) * itemsize
            if scratch and index not in views:
                intervals.append(Interval((SCRATCH, index), index, index, scratch))
            arena_output = index not in views and index not in fresh and index not in first
            if arena_output and node.primitive.memory.output_in_workspace:
                size = max(workspace, node.shape.volume * itemsize)
                intervals.append(Interval(index, index, storage_end[index], size))
                continue
            if arena_output:
                size = node.shape.volume * itemsize
                end = slot_end[index] if posture == "forward" else storage_end[index]
                intervals.append(Interval(index, index, end, size))
                shapes_of[index] = (tuple(node.shape), layouts[index])
            if workspace and index not in views:
                intervals.append(Interval((WORKSPACE, index), index, index, workspace))
        root_bytes = sum(aligned(nodes[i].shape.volume * itemsize) for i in fresh)
        self.nodes = nodes
        self.itemsize = itemsize
        self.views = frozenset(views)
        self.storage = storage
        self.layouts = layouts
        self.fresh = frozenset(fresh)
        self.taken_over = taken_over
        self.first = first
        self.storage_end = storage_end
        self.releases = releases
        self.live = live
        self.intervals = intervals
        self.shapes_of = shapes_of
        self.root_bytes = root_bytes
        self._search: PlacementSearch | None = None

    def plan(self, budget: int | None = None) -> MemoryPlan:
        """The memory plan: the intervals placed, searching no further once the arena
        and the roots fit `budget` (bytes), when there is one."""
        nodes, itemsize, layouts = self.nodes, self.itemsize, self.layouts
        if self._search is None:
            self._search = PlacementSearch(self.intervals)
        target = None if budget is None else budget - self.root_bytes
        offsets, arena_bytes = self._search.placement(target)
        slots: dict[int, Slot] = {}
        workspaces: dict[int, Slot] = {}
        scratches: dict[int, Slot] = {}
        for interval in self.intervals:
            offset = offsets[interval.key]
            if isinstance(interval.key, tuple):
                kind, index = interval.key
                flat = Slot(offset, (interval.size // itemsize,), (0,), interval.size)
                (scratches if kind == SCRATCH else workspaces)[index] = flat
            elif interval.key in self.shapes_of:
                shape, order = self.shapes_of[interval.key]
                slots[interval.key] = Slot(offset, shape, order, interval.size)
            else:
                # The output lives in the node's workspace: the slot is that workspace.
                index = interval.key
                workspaces[index] = Slot(offset, (interval.size // itemsize,), (0,), interval.size)
        for index, owner in self.first.items():
            size = nodes[index].shape.volume * itemsize
            slots[index] = Slot(
                slots[owner].offset, tuple(nodes[index].shape), layouts[index], size
            )
        return MemoryPlan(
            self.views,
            self.storage,
            layouts,
            self.fresh,
            slots,
            workspaces,
            scratches,
            self.storage_end,
            self.releases,
            arena_bytes,
            self.root_bytes,
            self.live,
            self.taken_over,
        )


def _takeovers(nodes, evaluated, storage, storage_end, layouts, views, fresh) -> dict[int, int]:
    """Each output that takes over an operand's slot (see the module), and that operand."""
    taken: dict[int, int] = {}
    for index in evaluated:
        node = nodes[index]
        if node.is_source or index in views or index in fresh:
            continue
        if node.primitive.memory.output_in_workspace:
            continue
        for position in node.primitive.memory.overwrites:
            operand = node.inputs[position]
            other = nodes[operand]
            if (
                not other.is_source
                and storage[operand] == operand
                and operand not in fresh
                and not other.primitive.memory.output_in_workspace
                and other.shape == node.shape
                and layouts[operand] == layouts[index]
                and storage_end[operand] == index
            ):
                taken[index] = operand
                break
    return taken


def _profile(nodes, evaluated, views, taking_over, storage_end) -> LiveProfile:
    """Elements of real buffers (views are free, and so is an output in the slot it takes
    over) live at each step, in the forward posture's lifetimes: the peak, where it
    happens, and the total were nothing released (so nothing taken over)."""
    dying: dict[int, list[int]] = {}
    for owner, end in storage_end.items():
        dying.setdefault(end, []).append(owner)
    live = peak = total = 0
    peak_node = evaluated[0] if evaluated else 0
    for index in evaluated:
        node = nodes[index]
        if index not in views and counted(node):
            total += node.shape.volume
            if index not in taking_over:
                live += node.shape.volume
        if live > peak:
            peak, peak_node = live, index
        for released in dying.get(index, ()):
            if counted(nodes[released]):
                live -= nodes[released].shape.volume
    return LiveProfile(peak, peak_node, total)

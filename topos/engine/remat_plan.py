"""RematPlan: a forward plan lowered under a memory budget, recomputing what it cannot keep.

The remat posture of the recorded route. Lowering makes the unconstrained forward
plan, then a schedule (RematSchedule) that may evaluate a node more than once:
release its buffer after an early reader and recompute it, from buffers still live,
right before a late one. Each evaluation becomes a step of its own *program* (a node
list in evaluation order whose operands name evaluations), and the program gets the
very memory plan every other plan gets: each evaluation its own slot interval in one
arena, views free, roots fresh per run. That memory plan's arena and roots (the
planned bytes, what a run writes into) are what must fit the budget. A recomputation
runs the same kernel on the same operand values as the first evaluation, so its bits
are the first evaluation's bits, and so a remat plan computes exactly what the
recorded plan computes.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from topos.engine.arena import aligned
from topos.engine.budget import Budget
from topos.engine.compute_cost import flops
from topos.engine.lowered_schedule import LoweredSchedule, graph_fingerprint
from topos.engine.memory_plan import MemoryPlan, MemoryPlanner, scratch_elements
from topos.engine.plan import Plan
from topos.engine.remat_schedule import (
    Evaluation,
    RematSchedule,
    RematScheduler,
    in_recording_order,
)
from topos.errors import BudgetError
from topos.graph.node import Node

if TYPE_CHECKING:
    from topos.engine.remat_search import RematSearch
    from topos.graph.network import Network


#: A plan whose planned bytes leave more than this share of its budget unused lands
#: far below it, and says so.
FAR_BELOW = 0.1


class RematPlan(Plan):
    """A forward plan whose planned bytes (arena and roots) stay within `budget` (see
    the module).

    Beyond a Plan: `unconstrained` (the recorded route's plan of the same roots) and
    `unconstrained_bytes` (its planned bytes), `schedule` and `program` (the
    evaluations, in order), `budget_bytes`, `planned_bytes` and `floor_bytes`,
    `recomputations`, `flops` and `extra_flops`, `budget_unused` and
    `far_below_budget`. `describe()` prints one line per evaluation.
    """

    def __init__(
        self,
        network: Network,
        roots: tuple[int, ...],
        budget: Budget | None,
        lowered: LoweredSchedule | None = None,
        *,
        unconstrained: Plan | None = None,
    ) -> None:
        # `unconstrained`: the forward plan of these roots, if lowered already (`Entry`).
        if unconstrained is None:
            unconstrained = Plan(network, roots, "forward", steps=False)
        base = unconstrained
        # The search's seconds (`search_seconds`): the unconstrained plan, which a
        # rebuilt plan lowers too, is not the search's.
        started = time.perf_counter()
        self.unconstrained = base
        self.network = network
        self.posture = "forward"
        self.roots = base.roots
        self._root_set = base._root_set
        self.evaluated = base.evaluated
        self._evaluated_set = base._evaluated_set
        self.last_consumer = base.last_consumer
        self.unconstrained_bytes = _planned_bytes(base.memory)
        if lowered is not None:
            self._rebuild(lowered)
            return
        # The floor is sought only when the budget is put in its terms or nothing the
        # ladder finds fits (see remat_search); else on demand (`floor_bytes`).
        self._search: RematSearch | None = None
        self._floor_bytes: int | None = None
        unconstrained = self.unconstrained_bytes
        needs_floor = budget.is_floor or budget.above_floor is not None
        wanted = None if needs_floor else budget.bytes_of(unconstrained, 0)
        chosen = None
        # A budget the unconstrained plan fits needs no search: that plan runs (the
        # search's tables and walks would be transient heap that stays resident).
        search = None
        if wanted is None or wanted < unconstrained:
            search = self._search = _new_search(network, base)
            if wanted is not None:
                chosen = search.cheapest(wanted)
            if wanted is None or chosen is None:
                floor = self.floor_bytes
                wanted = budget.bytes_of(unconstrained, floor)
                if wanted < floor:
                    # The floor is path-dependent (the greedy is not monotone): a search
                    # that seeks the floor first, as `lower("floor")` does, may end
                    # lower. A floor this library printed must be a budget it takes back.
                    search = _new_search(network, base)
                    fresh_floor = search.floor()
                    if fresh_floor <= wanted:
                        floor = self._floor_bytes = fresh_floor
                if wanted < floor:
                    raise BudgetError(
                        f"budget {wanted} bytes is below this plan's floor of {floor} "
                        f"bytes (the least memory its schedules plan for: some kernel's "
                        f"operands, output and workspace must be live together, beside "
                        f"the roots)",
                        wanted,
                        floor,
                    )
                if wanted < unconstrained:
                    chosen = search.cheapest(wanted)
        self.budget_bytes = wanted
        #: How many schedules the search laid out to choose this one.
        self.candidates_tried = 0 if search is None else len(search.candidates)
        # What the search holds (every schedule tried, its memory planner and placement
        # search, the walks' tables) is released with it: a floor asked for later gets
        # a search of its own (`floor_bytes`).
        self._search = None
        del search
        #: The seconds the search took (this lowering's, or the one the plan was
        #: rebuilt from), and whether this lowering searched (`lower_schedule`: no).
        self.search_seconds = time.perf_counter() - started
        self.searched = True
        if chosen is None:
            self._finish(None, None, None, None)
        else:
            self._finish(chosen.schedule, chosen.program, chosen.memory, chosen.target)

    def _rebuild(self, lowered: LoweredSchedule) -> None:
        """Lays out the schedule `lowered` says the search chose, for the target it was
        placed for, after checking it against this graph (see `lowered_schedule`)."""
        lowered.check(self.network, self.roots, self.evaluated)
        self._search = None
        self._floor_bytes = lowered.floor_bytes
        self.budget_bytes = lowered.budget_bytes
        self.candidates_tried = lowered.candidates_tried
        self.search_seconds = lowered.seconds
        self.searched = False
        schedule = lowered.schedule
        if schedule is None or lowered.target is None:
            self._finish(None, None, None, None)
            return
        program, planner = _planner(self.network, self.unconstrained, schedule)
        self._finish(schedule, program, planner.plan(lowered.target), lowered.target)

    def _finish(
        self,
        chosen: RematSchedule | None,
        program: list[Node] | None,
        memory: MemoryPlan | None,
        target: int | None,
    ) -> None:
        """Takes `chosen` (laid out as `program` into `memory`, placed for `target`), or
        with None the unconstrained schedule, and compiles the plan's steps."""
        network, base = self.network, self.unconstrained
        nodes = network.nodes
        views = base.memory.views
        self._identity = chosen is None or program is None or memory is None
        self._target = target
        # The unconstrained schedule is not kept (`schedule` lays it out when asked): a
        # plan that recomputes nothing holds no more than recorded's does.
        self._schedule = chosen
        self._program_nodes = program
        if chosen is None or program is None or memory is None:
            memory = base.memory
            self.extra_flops = self.recomputations = 0
        else:
            self.extra_flops = _extra_flops(nodes, views, chosen)
            self.recomputations = chosen.recomputations
        self.memory = memory
        self.live = memory.live
        self.releases = memory.releases
        self.flops = sum(flops(nodes[i], nodes, i in views) for i in self.evaluated)
        if self._identity:
            # The unconstrained schedule runs as the base plan does: its compiled steps
            # are shared, not compiled again (a second copy, held at ready, put remat at
            # 100% 0.4-1.1 MiB over recorded on gpt and a GRU).
            base.compile_steps()
            self._start_as(base)
        else:
            self._start(program, range(len(program)))

    @property
    def schedule(self) -> RematSchedule:
        """The evaluations in order (a plan that recomputes nothing: every node once, in
        recording order, laid out on each call rather than held)."""
        if self._schedule is None:
            return in_recording_order(self.network.nodes, self.evaluated)
        return self._schedule

    @property
    def program(self) -> list[Node]:
        """The evaluations as nodes in evaluation order, each operand naming the position
        of the evaluation it reads (a plan that recomputes nothing: the network's nodes)."""
        if self._program_nodes is None:
            return list(self.network.nodes)
        return self._program_nodes

    def lowered_schedule(self) -> LoweredSchedule:
        """What this lowering chose, for `Entry.lower_schedule` to rebuild this very plan
        (the same evaluations into the same bytes) without searching."""
        return LoweredSchedule(
            graph_fingerprint(self.network, self.roots),
            self.budget_bytes,
            None if self._identity else self._target,
            None if self._identity else self.schedule,
            self._floor_bytes,
            self.candidates_tried,
            self.search_seconds,
        )

    @property
    def floor_bytes(self) -> int:
        """The least planned bytes the search finds a schedule for (sought on first use
        when the budget did not need it: a bisection of walks, see `remat_search`)."""
        if self._floor_bytes is None:
            search = self._search or _new_search(self.network, self.unconstrained)
            floor = search.floor()
            # This plan's own schedule fits it, whatever the bisection met (once chosen:
            # the lowering itself may ask before).
            chosen = getattr(self, "memory", None)
            self._floor_bytes = floor if chosen is None else min(floor, self.planned_bytes)
        return self._floor_bytes

    @property
    def sought_floor_bytes(self) -> int | None:
        """The floor if the lowering sought it (its budget needed it) or it was asked
        for since; None otherwise (`floor_bytes` seeks it)."""
        return self._floor_bytes

    def _node_of(self, position: int) -> int:
        if self._identity:
            return position
        return self.schedule.evaluations[position].node

    def _node_buffers(self, buffers: list[Any]) -> list[Any]:
        if self._identity:
            return buffers
        by_node: list[Any] = [None] * len(self.network.nodes)
        for position, buffer in enumerate(buffers):
            if buffer is not None:
                by_node[self._node_of(position)] = buffer
        return by_node

    @property
    def fresh_roots(self) -> frozenset[int]:
        """The computed roots (network indices; the memory plan's are positions)."""
        return frozenset(self._node_of(position) for position in self.memory.fresh)

    @property
    def peak(self) -> int:
        """Elements live at the worst moment of the remat program."""
        return self.live.peak

    @property
    def peak_node(self) -> int:
        """The node whose evaluation meets the peak."""
        return self._node_of(self.live.peak_node)

    @property
    def planned_bytes(self) -> int:
        """What a run writes into: the arena and the roots' fresh buffers (within the
        budget)."""
        return _planned_bytes(self.memory)

    @property
    def unconstrained_peak(self) -> int:
        """The recorded route's forward peak (elements), which the budget is a share of."""
        return self.unconstrained.peak

    @property
    def budget_unused(self) -> float:
        """The share of the budget the planned bytes leave unused."""
        return 1 - self.planned_bytes / self.budget_bytes if self.budget_bytes else 0.0

    @property
    def far_below_budget(self) -> bool:
        """Whether the plan lands more than `FAR_BELOW` of its budget below it (said by
        `summary()`: the budget would allow more, but no schedule tried uses it)."""
        return not self._identity and self.budget_unused > FAR_BELOW

    @property
    def extra_flops_fraction(self) -> float:
        """The recomputations' FLOPs as a fraction of the unconstrained plan's."""
        return self.extra_flops / self.flops if self.flops else 0.0

    def _positions_of(self, index: int) -> list[int]:
        return [p for p in self._positions if self._node_of(p) == index]

    def _liveness_at(self, position: int) -> str:
        if position in self.releases:
            text = f"freed after {self._node_of(self.releases[position])}"
        else:
            text = "kept"
        if not self._identity and self.schedule.evaluations[position].recomputation:
            return f"recomputes {self._node_of(position)}, {text}"
        return text

    def liveness_of(self, index: int) -> str:
        """How long node `index`'s buffer lives, at its last evaluation."""
        positions = self._positions_of(index)
        return self._liveness_at(positions[-1]) if positions else "not evaluated"

    def summary(self, *, seek_floor: bool = True) -> list[str]:
        """The `plan:` and `live volume:` lines, with the recomputations and the budget;
        with `seek_floor` false, a floor the lowering did not seek is said not sought
        rather than sought now (a bisection of walks: a worker's summary at ready must
        not spend its seconds and heap on it)."""
        head = (
            f"plan: forward; {len(self.evaluated)} of {len(self.network.nodes)} nodes "
            f"evaluated, {self.recomputations} recomputed "
            f"(+{_percent(self.extra_flops_fraction)} FLOPs), {len(self.roots)} readable"
        )
        volume = (
            f"live volume: peak {self.peak} elements at node {self.peak_node}, "
            f"unconstrained {self.unconstrained.peak}"
        )
        floor = self.floor_bytes if seek_floor else self.sought_floor_bytes
        budget = (
            f"budget: {self.budget_bytes} bytes, planned {self.planned_bytes} (arena and "
            f"roots), floor {'not sought' if floor is None else floor}, unconstrained "
            f"{self.unconstrained_bytes}"
        )
        if self.far_below_budget:
            budget += (
                f"; planned {_percent(self.budget_unused)} below the budget: no schedule "
                f"tried fits closer to it with fewer recomputed FLOPs"
            )
        return [head, volume, budget]

    def describe(self) -> str:
        """One line per evaluation (index, operation, shape, liveness; a recomputation
        says `recomputes N`), then the summary, then the arena line."""
        nodes = self.network.nodes
        evaluated = list(self._positions)
        labels = {p: nodes[self._node_of(p)].label() for p in evaluated}
        shapes = {p: str(nodes[self._node_of(p)].shape) for p in evaluated}
        label_width = min(max(map(len, labels.values()), default=0), 48)
        shape_width = max(map(len, shapes.values()), default=0)
        lines = [
            f"{self._node_of(p):>6}  {labels[p]:<{label_width}}  {shapes[p]:<{shape_width}}  "
            f"{self._liveness_at(p)}"
            for p in evaluated
        ]
        return "\n".join([*lines, *self.summary(), self.arena_line()])


def _new_search(network: Network, base: Plan) -> RematSearch:
    """A search over the schedules of `base` (the unconstrained forward plan): its
    scheduler's tables and a memory planner per schedule laid out, kept while it lives."""
    # Imported here: a plan rebuilt from its schedule, or one the budget lets run
    # unconstrained, never searches, and its process need not load (or, where no
    # bytecode is written, compile) the search and its simulation.
    from topos.engine.remat_search import RematSearch

    nodes = network.nodes
    storage, views = base.memory.storage, base.memory.views
    sizes, workspaces = _buffer_bytes(nodes, base.evaluated, base.memory, network.dtype)

    # The search below lays the same evaluations out under several budgets (walks
    # under nearby budgets often end alike): each program and its memory planner are
    # kept, found by the number of evaluations, then compared.
    planners: dict[int, list[tuple[tuple[Evaluation, ...], list[Node], MemoryPlanner]]] = {}

    def lay_out(
        schedule: RematSchedule, budget: int | None = None
    ) -> tuple[list[Node], MemoryPlan]:
        evaluations = schedule.evaluations
        alike = planners.setdefault(len(evaluations), [])
        known = next(
            (kept for kept in alike if kept[0] is evaluations or kept[0] == evaluations),
            None,
        )
        if known is None:
            program, planner = _planner(network, base, schedule)
            known = (evaluations, program, planner)
            alike.append(known)
        _, program, planner = known
        return program, planner.plan(budget)

    scheduler = RematScheduler(nodes, base.evaluated, base.roots, storage, views, sizes, workspaces)

    def extra_flops(schedule: RematSchedule) -> int:
        return _extra_flops(nodes, views, schedule)

    return RematSearch(scheduler, lay_out, extra_flops, _planned_bytes(base.memory))


def _planner(
    network: Network, base: Plan, schedule: RematSchedule
) -> tuple[list[Node], MemoryPlanner]:
    """The program of `schedule` and its memory planner (the roots' evaluations fresh)."""
    program = _program(network.nodes, schedule)
    positions = [
        position
        for position, evaluation in enumerate(schedule.evaluations)
        if evaluation.node in base.roots
    ]
    return program, MemoryPlanner(program, range(len(program)), positions, "forward", network.dtype)


def _extra_flops(nodes: Sequence[Node], views: Collection[int], schedule: RematSchedule) -> int:
    """The FLOPs of the schedule's recomputations."""
    return sum(
        flops(nodes[evaluation.node], nodes, evaluation.node in views)
        for evaluation in schedule.evaluations
        if evaluation.recomputation
    )


def _planned_bytes(memory: MemoryPlan) -> int:
    """The bytes a run of a memory plan writes into: its arena and its roots."""
    return memory.arena_bytes + memory.root_bytes


def _buffer_bytes(
    nodes: Sequence[Node], evaluated: Sequence[int], memory: MemoryPlan, dtype
) -> tuple[dict[int, int], dict[int, int]]:
    """What the schedule's simulation counts, as the memory plan places it: the aligned
    bytes of each computed buffer (a root's fresh one too; an output living in its
    workspace as large as that), and the aligned bytes of each kernel's workspace that
    lives only during its step (a scratch beside it included)."""
    itemsize = np.dtype(dtype).itemsize
    sizes: dict[int, int] = {}
    workspaces: dict[int, int] = {}
    for index in evaluated:
        node = nodes[index]
        if node.is_source or index in memory.views:
            continue
        scratch = itemsize * node.primitive.memory.workspace_elements(
            [nodes[i].shape for i in node.inputs],
            [memory.layouts[i] for i in node.inputs],
            node.attributes,
        )
        output = node.shape.volume * itemsize
        # Scratch beside a workspace that holds the output: live during the step only.
        during = aligned(scratch_elements(node, nodes) * itemsize)
        if node.primitive.memory.output_in_workspace and index not in memory.fresh:
            sizes[index] = aligned(max(output, scratch))
        else:
            sizes[index] = aligned(output)
            during += aligned(scratch)
        if during:
            workspaces[index] = during
    return sizes, workspaces


def _program(nodes: Sequence[Node], schedule: RematSchedule) -> list[Node]:
    """The schedule as a node list in evaluation order, each operand naming the position
    of the evaluation it reads."""
    program = []
    for evaluation in schedule.evaluations:
        node = nodes[evaluation.node]
        program.append(
            Node(
                node.operation,
                node.primitive,
                evaluation.inputs,
                node.shape,
                node.attributes,
                node.source,
            )
        )
    return program


def _percent(fraction: float) -> str:
    """A share as describe() prints it: whole percent, or tenths below ten."""
    percent = 100 * fraction
    return f"{percent:.0f}%" if percent >= 10 or percent == 0 else f"{percent:.1f}%"

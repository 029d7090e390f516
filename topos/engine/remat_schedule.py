"""RematSchedule: which nodes a budgeted forward plan evaluates, in which order, and how often.

The schedule walks the forward plan's nodes in recording order, as the unconstrained
plan would, simulating the bytes its memory plan will hold: every computed buffer
(views are free, sources are not the plan's), and each kernel's workspace during its
step. Before a kernel's output is allocated, buffers are evicted until the output
fits the budget; when a later kernel reads an evicted buffer, it is recomputed first,
from its own operands (recomputed in turn if they are gone too). The eviction is the
greedy of Dynamic Tensor Rematerialization (Kirisame et al., ICLR 2021), given what
DTR cannot have at run time: the whole program. It evicts the buffer with the smallest

    h = (cost of recomputing it, and whatever of its ancestry is gone too)
        / (its size * the steps until its next use)

so cheap, big buffers that are needed late go first (the next-use distance is
Belady's rule; DTR, working online, uses staleness in its place). The costs are
`compute_cost.cost`, pure functions of shapes, and ties go to the lower node index, so
the schedule is a pure function of the graph and the budget.

Buffers the simulation never evicts: sources (a fed input cannot be recomputed; it is
the caller's memory, not the plan's, so it costs the budget nothing), roots (the
caller reads them) and any buffer pinned as an operand of the kernel about to run.
The simulation is conservative: the memory plan of the schedule frees every buffer
right after its last reader, no later than the simulation's eviction. The memory
plan, not this simulation, has the last word on whether a schedule fits.

`RematScheduler` works out what depends on the graph alone once, for the many budgets
a lowering tries; `remat_simulation.RematSimulation` is the walk under one budget.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from topos.engine.compute_cost import cost
from topos.graph.node import Node


@dataclass(frozen=True)
class Evaluation:
    """One kernel call of a schedule: the node it computes, the positions (in the
    schedule) of the evaluations whose buffers it reads, and whether the node was
    evaluated before (a recomputation)."""

    node: int
    inputs: tuple[int, ...]
    recomputation: bool


@dataclass(frozen=True)
class RematSchedule:
    """A budgeted schedule: its evaluations in order, the peak live volume its simulation
    saw (elements), and whether that simulation kept within the budget."""

    evaluations: tuple[Evaluation, ...]
    simulated_peak: int
    fits: bool

    @property
    def recomputations(self) -> int:
        """How many evaluations recompute a node evaluated before."""
        return sum(evaluation.recomputation for evaluation in self.evaluations)


def in_recording_order(nodes: Sequence[Node], evaluated: Sequence[int]) -> RematSchedule:
    """The unconstrained schedule: every node once, in recording order."""
    positions: dict[int, int] = {}
    evaluations = []
    for index in evaluated:
        inputs = tuple(positions[i] for i in nodes[index].inputs)
        positions[index] = len(evaluations)
        evaluations.append(Evaluation(index, inputs, False))
    return RematSchedule(tuple(evaluations), 0, True)


def schedule_recomputation(
    nodes: Sequence[Node],
    evaluated: Sequence[int],
    roots: Collection[int],
    storage: Mapping[int, int],
    views: Collection[int],
    sizes: Mapping[int, int],
    workspaces: Mapping[int, int],
    budget: int,
) -> RematSchedule:
    """The schedule that keeps the simulated planned memory within `budget` bytes,
    recomputing as little as the greedy finds (see `RematScheduler`, which this builds
    for one budget)."""
    return RematScheduler(nodes, evaluated, roots, storage, views, sizes, workspaces).schedule(
        budget
    )


class RematScheduler:
    """The greedy's view of one plan, for schedules under any number of budgets.

    `evaluated` is the plan's nodes in recording order; `storage` and `views` are the
    unconstrained memory plan's: which buffer each node's payload lives in, and which
    nodes are views of an operand; `sizes` gives the bytes of each storage the plan
    allocates (absent: none, as for a source), `workspaces` the scratch bytes a node's
    kernel holds during its own step. What depends on the graph alone (readers, costs,
    which storages may ever be evicted) is worked out once, here.
    """

    def __init__(
        self,
        nodes: Sequence[Node],
        evaluated: Sequence[int],
        roots: Collection[int],
        storage: Mapping[int, int],
        views: Collection[int],
        sizes: Mapping[int, int],
        workspaces: Mapping[int, int],
    ) -> None:
        views = frozenset(views)
        count = len(nodes)
        self.count = count
        self.evaluated = tuple(evaluated)
        self.roots = frozenset(roots)
        # Lists indexed by node (the simulation's hot paths read them millions of times).
        self.inputs: list[tuple[int, ...]] = [node.inputs for node in nodes]
        self.is_source = [node.is_source for node in nodes]
        self.storage = [storage.get(index, index) for index in range(count)]
        self.size = [sizes.get(index, 0) for index in range(count)]
        self.workspace = [workspaces.get(index, 0) for index in range(count)]
        self.cost = [0] * count
        # The distinct readers of each node, in recording order, and the nodes whose
        # last reader each node is (they die after its step).
        self.readers: list[list[int]] = [[] for _ in range(count)]
        self.dying: list[list[int]] = [[] for _ in range(count)]
        # The nodes holding each storage (itself and its views), in ascending order.
        self.members: list[list[int]] = [[] for _ in range(count)]
        for index in self.evaluated:
            self.cost[index] = cost(nodes[index], nodes, index in views)
            self.members[self.storage[index]].append(index)
            for operand in nodes[index].inputs:
                readers = self.readers[operand]
                if not readers or readers[-1] != index:
                    readers.append(index)
        for index in self.evaluated:
            readers = self.readers[index]
            if readers:
                self.dying[readers[-1]].append(index)
        # What the greedy may evict, whatever the budget: not a source (a fed input
        # cannot be recomputed), not a root (the caller reads it), and something that
        # costs bytes.
        # The schedules walked so far, each with the range of budgets it is the walk of.
        self._walked: list[tuple[int, float, RematSchedule]] = []
        self.evictable = [
            not node.is_source and index not in self.roots and self.size[index] > 0
            for index, node in enumerate(nodes)
        ]

    def schedule(self, budget: int) -> RematSchedule | None:
        """The schedule that keeps the simulated planned memory within `budget` bytes.

        When the greedy gets stuck (the buffers a kernel needs at once exceed the
        budget) inside a recomputation, the eviction that made the recomputation
        necessary is forbidden and the walk goes again; when no such eviction is left,
        the schedule is returned with `fits` False.

        A walk decides only by comparing bytes with the budget, so every budget that
        compares the same way gets the same schedule: a budget within the range of one
        walked before gets its schedule again, without a walk. A walk that thrashes
        (`remat_simulation.WORK_LIMIT`) gives None: the budget is not met."""
        for within, over, schedule in self._walked:
            if within <= budget < over:
                return schedule
        # Imported here: a plan rebuilt from its schedule reads Evaluation and
        # RematSchedule from this module and walks nothing, and its process need not
        # load (or, where no bytecode is written, compile) the simulation.
        from topos.engine.remat_simulation import RematSimulation, ThrashError

        simulation = RematSimulation(self, budget)
        try:
            evaluations, peak, fits = simulation.run()
        except ThrashError:
            return None  # not kept among the walks: its range of budgets is not known
        schedule = RematSchedule(
            tuple(Evaluation(*evaluation) for evaluation in evaluations), peak, fits
        )
        self._walked.append((simulation.within, simulation.over, schedule))
        return schedule

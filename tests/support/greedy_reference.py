"""The remat schedule's greedy as it was first written: a slow, plain reference.

`reference_schedule` walks the plan and picks every victim by scanning all held
storages and costing their restoration afresh, restarting the whole walk whenever a
recomputation gets stuck. `topos.engine.remat_schedule` gets the same schedules faster
(see `topos.engine.remat_simulation`); the tests compare the two on random graphs.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from topos.engine.compute_cost import cost
from topos.engine.remat_schedule import Evaluation, RematSchedule
from topos.graph.node import Node


def reference_schedule(
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
    recomputing as little as the greedy finds. `storage` and `views` are the
    unconstrained memory plan's: which buffer each node's payload lives in, and which
    nodes are views of an operand; `sizes` gives the bytes of each storage the plan
    allocates (absent: none, as for a source), `workspaces` the scratch bytes a node's
    kernel holds during its own step.

    When the greedy gets stuck (the buffers a kernel needs at once exceed the budget)
    inside a recomputation, the eviction that made the recomputation necessary is
    forbidden and the walk starts over; when no such eviction is left, the schedule
    is returned with `fits` False."""
    protected: set[int] = set()
    while True:
        simulation = _Simulation(
            nodes, evaluated, roots, storage, views, sizes, workspaces, budget, protected
        )
        try:
            return simulation.run()
        except _StuckError as stuck:
            protected.add(stuck.storage)


class _StuckError(Exception):
    """The simulation cannot fit a recomputation that evicting `storage` caused."""

    def __init__(self, storage: int) -> None:
        super().__init__(storage)
        self.storage = storage


class _Simulation:
    """The live volume of a schedule as it is built (see the module)."""

    def __init__(
        self, nodes, evaluated, roots, storage, views, sizes, workspaces, budget, protected
    ) -> None:
        self.protected = protected
        self.sizes = sizes
        self.workspaces = workspaces
        # The nodes being recomputed, outermost first, and the storage whose eviction
        # dropped each evicted node.
        self.chain: list[int] = []
        self.evicted_by: dict[int, int] = {}
        self.nodes = nodes
        self.evaluated = evaluated
        self.roots = frozenset(roots)
        self.storage = storage
        self.views = frozenset(views)
        self.budget = budget
        self.readers: dict[int, list[int]] = {}
        for index in evaluated:
            for operand in nodes[index].inputs:
                readers = self.readers.setdefault(operand, [])
                if not readers or readers[-1] != index:
                    readers.append(index)
        # The nodes whose last reader each node is: they die after its step.
        self.dying: dict[int, list[int]] = {}
        for index, readers in self.readers.items():
            self.dying.setdefault(readers[-1], []).append(index)
        # Nodes made resident during the current step (a recomputed ancestor may already
        # be past its last reader).
        self.arrived: list[int] = []
        self.costs = {index: cost(nodes[index], nodes, index in self.views) for index in evaluated}
        # Resident nodes (their latest evaluation's position), and which resident nodes
        # hold each storage: a storage costs memory while any of them is resident.
        self.resident: dict[int, int] = {}
        self.holders: dict[int, set[int]] = {}
        self.pins: Counter[int] = Counter()
        self.evaluations: list[Evaluation] = []
        self.evaluated_once: set[int] = set()
        self.live = 0
        self.peak = 0
        self.fits = True
        self.now = 0

    def size(self, storage: int) -> int:
        return self.sizes.get(storage, 0)

    def run(self) -> RematSchedule:
        nodes = self.nodes
        for index in self.evaluated:
            self.now = index
            node = nodes[index]
            if node.is_source:
                self.allocate(index)
                self.emit(index)
                continue
            self.gather(node.inputs)
            self.allocate(index)
            self.emit(index)
            self.unpin(node.inputs)
            self.release_dead()
        return RematSchedule(tuple(self.evaluations), self.peak, self.fits)

    def gather(self, operands: Sequence[int]) -> None:
        """Makes every operand resident, pinning each as soon as it is, so that
        recomputing a later operand never evicts an earlier one."""
        for operand in operands:
            if operand not in self.resident:
                self.recompute(operand)
            self.pins[operand] += 1

    def unpin(self, operands: Sequence[int]) -> None:
        for operand in operands:
            self.pins[operand] -= 1

    def recompute(self, index: int) -> None:
        self.chain.append(index)
        operands = self.nodes[index].inputs
        self.gather(operands)
        self.allocate(index)
        self.emit(index)
        self.unpin(operands)
        self.chain.pop()

    def allocate(self, index: int) -> None:
        """Evicts until the buffer of `index` fits, then counts it as live."""
        storage = self.storage[index]
        need = 0 if self.holders.get(storage) else self.size(storage)
        need += self.workspaces.get(index, 0)
        while need and self.live + need > self.budget:
            victim = self.victim()
            if victim is None:
                for node in self.chain:
                    cause = self.evicted_by.get(node)
                    if cause is not None and cause not in self.protected:
                        raise _StuckError(cause)
                self.fits = False
                break
            self.evict(victim)
        self.peak = max(self.peak, self.live + need)

    def emit(self, index: int) -> None:
        node = self.nodes[index]
        inputs = tuple(self.resident[i] for i in node.inputs)
        self.evaluations.append(Evaluation(index, inputs, index in self.evaluated_once))
        self.evaluated_once.add(index)
        storage = self.storage[index]
        holders = self.holders.setdefault(storage, set())
        if not holders:
            self.live += self.size(storage)
        holders.add(index)
        self.resident[index] = len(self.evaluations) - 1
        self.arrived.append(index)

    def drop(self, index: int) -> None:
        del self.resident[index]
        self.evicted_by.pop(index, None)
        storage = self.storage[index]
        holders = self.holders[storage]
        holders.discard(index)
        if not holders:
            self.live -= self.size(storage)

    def evict(self, storage: int) -> None:
        for index in sorted(self.holders[storage]):
            self.drop(index)
            self.evicted_by[index] = storage

    def next_use(self, index: int) -> int | None:
        readers = self.readers.get(index, ())
        position = bisect_right(readers, self.now)
        return readers[position] if position < len(readers) else None

    def release_dead(self) -> None:
        """Drops every resident buffer that no later kernel of the plan reads (a later
        recomputation that needs one recomputes it). Only two kinds can have died in
        this step: those whose last reader it ran, and those it made resident."""
        candidates = [*self.dying.get(self.now, ()), *self.arrived]
        self.arrived = []
        for index in candidates:
            if index not in self.resident:
                continue
            node = self.nodes[index]
            if node.is_source or index in self.roots or self.pins[index]:
                continue
            if self.next_use(index) is None:
                self.drop(index)

    def evictable(self, storage: int) -> bool:
        node = self.nodes[storage]
        if node.is_source or storage in self.roots or storage in self.protected:
            return False
        if not self.size(storage):
            return False
        return not any(self.pins[index] for index in self.holders[storage])

    def victim(self) -> int | None:
        """The evictable storage with the smallest h (see the module), or None."""
        best: tuple | None = None
        memo: dict[int, int] = {}
        for storage, holders in self.holders.items():
            if not holders or not self.evictable(storage):
                continue
            uses = [use for use in map(self.next_use, holders) if use is not None]
            if not uses:
                return storage
            distance = min(uses) - self.now
            base = self.costs[storage] + sum(
                self.restore_cost(operand, memo) for operand in self.nodes[storage].inputs
            )
            score = (base / (self.size(storage) * distance), storage)
            if best is None or score < best:
                best = score
        return None if best is None else best[1]

    def restore_cost(self, index: int, memo: dict[int, int]) -> int:
        """What making `index` resident again costs now: nothing if it is, else its own
        kernel and those of its missing ancestors."""
        if index in self.resident:
            return 0
        known = memo.get(index)
        if known is None:
            known = self.costs[index] + sum(
                self.restore_cost(operand, memo) for operand in self.nodes[index].inputs
            )
            memo[index] = known
        return known

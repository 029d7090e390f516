"""The remat schedule's greedy, written again from its specification: a slow, plain
reference.

What `topos.engine.remat_schedule` promises (its module docstring, `RematScheduler`'s
and `RematSimulation`'s are the specification):

- The walk visits the plan's nodes in recording order. A source is allocated and
  evaluated. Any other node first has its operands made resident, in operand order,
  each pinned as soon as it is (an operand that is not resident is recomputed first,
  from its own operands, the same way); then its own buffer is allocated, it is
  evaluated, its operands are unpinned, and every resident node that is not a source,
  not a root and that no later node reads is dropped.
- Allocating a node needs its storage's bytes (none if a resident node holds that
  storage already) plus its kernel's workspace. While the need is not zero and the
  live bytes plus the need exceed the budget, a victim storage is evicted: every
  resident node holding it is dropped. The peak is the most live bytes plus need any
  allocation saw.
- A victim is a held storage whose own node is no source and no root, with bytes, not
  protected and with no resident holder pinned. One that no later node reads (through
  any resident holder) goes first, the lowest numbered; else the one with the
  smallest h = (cost of its own node + cost of restoring each operand of its node) /
  (its bytes * (the nearest later reader of a resident holder - the current step)),
  ties to the lowest numbered. Restoring a node costs nothing when it is resident,
  else its own cost plus restoring each of its operands: an ancestor reached by two
  paths counts twice. Costs are `compute_cost.cost` (the cost model the greedy is
  given; a view costs nothing).
- With no victim, if some node being recomputed (outermost first) was last dropped by
  an eviction whose storage is not protected, that storage becomes protected and the
  walk starts over; else the schedule does not fit, and the walk goes on.

Nothing here is taken from `topos.engine` but the cost model and the `Evaluation` and
`RematSchedule` records the answer is given in. The restore cost is counted by paths
(each missing node's cost times the number of paths to it through missing nodes), not
by recursion; every walk starts from the first node; nothing is kept between victims.
"""

from __future__ import annotations

from collections.abc import Sequence

from topos.engine.compute_cost import cost
from topos.engine.remat_schedule import Evaluation, RematSchedule


def reference_schedule(nodes, evaluated, roots, storage, views, sizes, workspaces, budget):
    """The schedule `RematScheduler(...).schedule(budget)` must give (see the module),
    from the arguments `RematScheduler` and its `schedule` take: `nodes` (sequence of
    `Node`), `evaluated` (node indices, recording order), `roots`, `storage` (node ->
    storage, absent: itself), `views`, `sizes` (storage -> bytes, absent: none),
    `workspaces` (node -> bytes during its step, absent: none), `budget` (bytes)."""
    schedule, _ = reference_schedule_and_longest_walk(
        nodes, evaluated, roots, storage, views, sizes, workspaces, budget
    )
    return schedule


def reference_schedule_and_longest_walk(
    nodes, evaluated, roots, storage, views, sizes, workspaces, budget
):
    """`reference_schedule`'s schedule, and the most evaluations any of its walks made
    (one that got stuck and was walked again included): what `WORK_LIMIT` bounds."""
    protected: set[int] = set()
    longest = 0
    while True:
        walk = _Walk(nodes, evaluated, roots, storage, views, sizes, workspaces, budget)
        walk.protected = set(protected)
        outcome = walk.run()
        longest = max(longest, len(walk.evaluations))
        if isinstance(outcome, RematSchedule):
            return outcome, longest
        protected.add(outcome)


class _Walk:
    """One walk from the first node under one budget and one protected set."""

    def __init__(self, nodes, evaluated, roots, storage, views, sizes, workspaces, budget):
        self.nodes = nodes
        self.evaluated = list(evaluated)
        self.roots = set(roots)
        self.storage_map = storage
        self.views = set(views)
        self.sizes = sizes
        self.workspaces = workspaces
        self.budget = budget
        # node -> the evaluated nodes that read it, in order: the readers are looked up
        # for every resident node at every step, and a scan of the whole plan each time
        # made this reference most of the time of the tests that use it
        self.readers: dict[int, list[int]] = {}
        for reader in self.evaluated:
            for operand in dict.fromkeys(nodes[reader].inputs):
                self.readers.setdefault(operand, []).append(reader)
        self.protected: set[int] = set()
        # node -> position in `evaluations` of its latest evaluation, while resident
        self.resident: dict[int, int] = {}
        # node -> the storage whose eviction last dropped it (absent: it left otherwise)
        self.dropped_by: dict[int, int] = {}
        # node -> how many kernels about to run (or being recomputed) read it
        self.pins: dict[int, int] = {}
        self.recomputing: list[int] = []
        self.evaluations: list[Evaluation] = []
        self.peak = 0
        self.fits = True
        self.now = 0

    # What the plan says, looked up plainly every time.

    def storage_of(self, node: int) -> int:
        return self.storage_map.get(node, node)

    def bytes_of(self, storage: int) -> int:
        return self.sizes.get(storage, 0)

    def cost_of(self, node: int) -> int:
        return cost(self.nodes[node], self.nodes, node in self.views)

    def readers_after(self, node: int, step: int) -> list[int]:
        return [reader for reader in self.readers.get(node, ()) if reader > step]

    def live_bytes(self) -> int:
        held = {self.storage_of(node) for node in self.resident}
        return sum(self.bytes_of(storage) for storage in held)

    # The walk.

    def run(self) -> RematSchedule | int:
        """The schedule, or the storage to protect before walking again."""
        for index in self.evaluated:
            self.now = index
            if self.nodes[index].is_source:
                self.allocate(index)
                self.evaluate(index)
                continue
            stuck = self.evaluate_with_operands(index)
            if stuck is not None:
                return stuck
            for node in sorted(self.resident):
                if (
                    not self.nodes[node].is_source
                    and node not in self.roots
                    and not self.readers_after(node, self.now)
                ):
                    self.leave(node, None)
        return RematSchedule(tuple(self.evaluations), self.peak, self.fits)

    def evaluate_with_operands(self, index: int) -> int | None:
        operands = self.nodes[index].inputs
        for operand in operands:
            if operand not in self.resident:
                self.recomputing.append(operand)
                stuck = self.evaluate_with_operands(operand)
                self.recomputing.pop()
                if stuck is not None:
                    return stuck
            self.pins[operand] = self.pins.get(operand, 0) + 1
        stuck = self.allocate(index)
        if stuck is not None:
            return stuck
        self.evaluate(index)
        for operand in operands:
            self.pins[operand] -= 1
        return None

    def evaluate(self, index: int) -> None:
        inputs = tuple(self.resident[operand] for operand in self.nodes[index].inputs)
        before = any(evaluation.node == index for evaluation in self.evaluations)
        self.evaluations.append(Evaluation(index, inputs, before))
        self.resident[index] = len(self.evaluations) - 1

    def leave(self, node: int, evicted_by: int | None) -> None:
        del self.resident[node]
        if evicted_by is None:
            self.dropped_by.pop(node, None)
        else:
            self.dropped_by[node] = evicted_by

    def allocate(self, index: int) -> int | None:
        """Evicts until `index`'s buffer and workspace fit; the storage to protect when
        a recomputation is stuck."""
        storage = self.storage_of(index)
        held = any(self.storage_of(node) == storage for node in self.resident)
        need = (0 if held else self.bytes_of(storage)) + self.workspaces.get(index, 0)
        while need > 0 and self.live_bytes() + need > self.budget:
            victim = self.victim()
            if victim is None:
                for node in self.recomputing:
                    cause = self.dropped_by.get(node)
                    if cause is not None and cause not in self.protected:
                        return cause
                self.fits = False
                break
            for node in sorted(self.resident):
                if self.storage_of(node) == victim:
                    self.leave(node, victim)
        self.peak = max(self.peak, self.live_bytes() + need)
        return None

    def victim(self) -> int | None:
        holders: dict[int, list[int]] = {}
        for node in self.resident:
            holders.setdefault(self.storage_of(node), []).append(node)
        choices = []
        for storage in sorted(holders):
            if self.nodes[storage].is_source or storage in self.roots:
                continue
            if storage in self.protected or self.bytes_of(storage) == 0:
                continue
            if any(self.pins.get(node, 0) > 0 for node in holders[storage]):
                continue
            later = [
                reader for node in holders[storage] for reader in self.readers_after(node, self.now)
            ]
            choices.append((storage, min(later) if later else None))
        for storage, nearest in choices:
            if nearest is None:
                return storage
        best = None
        best_h = None
        for storage, nearest in choices:
            work = self.cost_of(storage) + self.restore_cost(self.nodes[storage].inputs)
            h = work / (self.bytes_of(storage) * (nearest - self.now))
            if best_h is None or h < best_h:
                best, best_h = storage, h
        return best

    def restore_cost(self, operands: Sequence[int]) -> int:
        """What making every one of `operands` resident again costs, an ancestor counted
        once for every path to it through nodes that are not resident."""
        paths = [0] * len(self.nodes)
        for operand in operands:
            paths[operand] += 1
        total = 0
        for node in reversed(range(len(self.nodes))):
            if paths[node] == 0 or node in self.resident:
                continue
            total += paths[node] * self.cost_of(node)
            for operand in self.nodes[node].inputs:
                paths[operand] += paths[node]
        return total

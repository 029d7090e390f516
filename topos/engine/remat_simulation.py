"""RematSimulation: the walk that builds one remat schedule under one budget.

It walks the plan's nodes in recording order, counting the bytes the memory plan will
hold, evicting by the greedy `topos.engine.remat_schedule` describes and recomputing
what a kernel reads after its eviction. Four things make it quick without changing
what it decides:

- *Candidates.* The storages the greedy may evict (held, not a source, not a root,
  not protected, with bytes) are kept as a set as buffers arrive and leave, so
  picking a victim scans those alone rather than every storage ever held.
- *Resumed walks.* When a recomputation gets stuck, the eviction that caused it is
  forbidden and the walk starts over. A walk that forbids one more storage decides
  exactly as the walk before it until the step where that storage was first evicted
  (before it, the storage was never the victim, so leaving it out changes no choice),
  so the walk resumes from a snapshot taken at the start of that step instead of from
  the first node. A snapshot is taken at the start of every step that evicts.
- *Kept restore costs.* What restoring an evicted node costs (its kernel and those of
  its missing ancestors) changes only when some ancestor arrives or leaves, so it is
  kept from one victim to the next, and forgotten for a node's descendants when the
  node arrives or leaves.
- *Bounded victims.* A candidate's h is at least its own kernel's cost over its bytes
  times the steps to its next use, so candidates are costed in the order of that bound
  and no further than the bound passes the best h found.
- *Kept next uses.* A storage's next use (the first step after now that reads one of
  its resident nodes) stays the same until that step is reached or one of its nodes
  arrives or leaves, so it is kept from one victim to the next, and forgotten then.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from topos.engine.remat_schedule import RematScheduler

#: The value of `resident` and `evicted_by` for a node that is not resident / not evicted.
_NONE = -1


#: A walk that has emitted more than this many evaluations per node of the plan is
#: thrashing (recomputing chains that evict each other, as a GRU's unrolled steps do
#: near the floor: 860,000 recomputations for 1,084 nodes, a minute of planning) and is
#: given up: no schedule that evaluates the plan four times over is worth running.
WORK_LIMIT = 4

#: A walk whose evaluations, counting those its restarts discard (see `run`), pass this
#: many per node of the plan is given up too: below the floor a walk gets stuck again
#: and again, each restart forbidding one more eviction (a 500-layer MLP at a tenth of
#: its bytes: 1,321 restarts, 1.7 million evaluations, 48 s, and the budget still not
#: met). The walks that fit on the built-ins evaluate at most about 2 per node in all;
#: those that fail, 7 to 14.
RESTART_WORK_LIMIT = 8

#: Evaluations every walk may spend, whatever the plan's size: a small graph's walk is
#: cheap however often it restarts (20,000 evaluations take a tenth of a second or so),
#: and a bound in proportion to a few dozen nodes would give up walks that meet the
#: budget after many restarts.
RESTART_WORK_ALLOWANCE = 20_000


class ThrashError(Exception):
    """The walk passed `WORK_LIMIT` evaluations per node (or `RESTART_WORK_LIMIT` with
    its restarts): this budget is treated as one the greedy cannot meet."""


class StuckError(Exception):
    """The simulation cannot fit a recomputation that evicting `storage` caused."""

    def __init__(self, storage: int) -> None:
        super().__init__(storage)
        self.storage = storage


@dataclass(frozen=True)
class _Snapshot:
    """The walk's state at the start of a step (nothing is pinned or being recomputed
    there, and the nodes made resident by earlier steps are settled)."""

    resident: list[int]
    held: list[int]
    evicted_by: list[int]
    candidates: set[int]
    evaluations: int
    live: int
    peak: int
    fits: bool


class RematSimulation:
    """One budget's walk over a `RematScheduler`'s tables (see the module); `run()` gives
    the evaluations, the peak bytes the walk saw and whether it kept within the budget.
    """

    def __init__(self, tables: RematScheduler, budget: int) -> None:
        self.tables = tables
        self.budget = budget
        count = tables.count
        #: Storages whose eviction caused a stuck recomputation: never evicted again.
        self.protected: set[int] = set()
        # Per node: the position of its latest evaluation while resident, and the
        # storage whose eviction dropped it.
        self.resident = [_NONE] * count
        self.evicted_by = [_NONE] * count
        # Per storage: how many resident nodes hold it (it costs bytes while any does),
        # and how many of those are pinned as operands of a kernel about to run.
        self.held = [0] * count
        self.pinned = [0] * count
        self.candidates: set[int] = set()
        # The nodes being recomputed, outermost first.
        self.chain: list[int] = []
        # Nodes made resident during the current step (a recomputed ancestor may already
        # be past its last reader).
        self.arrived: list[int] = []
        self.evaluations: list[tuple[int, tuple[int, ...], bool]] = []
        self.live = 0
        self.peak = 0
        self.fits = True
        self.now = 0
        # The walk compares bytes with the budget and nothing else: the largest that
        # fitted it and the smallest that did not bound the budgets whose walk this is.
        self.within = 0
        self.over = math.inf
        # The position (in the walk) of the current step, the snapshot of its start
        # once it evicts, and the step at which each storage was first evicted.
        self.step = 0
        # What a snapshot of the current step needs of its start: the evaluations
        # emitted before it, and the live bytes, peak and fit then.
        self.step_start: tuple[int, int, int, bool] = (0, 0, 0, True)
        self.snapshots: dict[int, _Snapshot] = {}
        self.first_evicted: dict[int, int] = {}
        # The restore cost of evicted nodes, as far as known (see `restore_cost`).
        self.restore_costs: dict[int, int] = {}
        # Per storage, its next use as far as known (see `victim`; None: no later
        # kernel reads it), forgotten when one of its nodes arrives or leaves.
        self.next_uses: dict[int, int | None] = {}
        self.work_limit = WORK_LIMIT * len(self.tables.evaluated)
        # Evaluations emitted so far, those discarded by restarts included.
        self.work = 0
        self.restart_work_limit = max(
            RESTART_WORK_LIMIT * len(self.tables.evaluated), RESTART_WORK_ALLOWANCE
        )

    def run(self) -> tuple[list[tuple[int, tuple[int, ...], bool]], int, bool]:
        """Walks to the end, resuming after every stuck recomputation (see the module)."""
        start = 0
        while True:
            try:
                self._walk(start)
                return self.evaluations, self.peak, self.fits
            except StuckError as stuck:
                start = self.first_evicted[stuck.storage]
                self.protected.add(stuck.storage)
                self._restore(start)

    def _walk(self, start: int) -> None:
        tables = self.tables
        inputs = tables.inputs
        is_source = tables.is_source
        for step in range(start, len(tables.evaluated)):
            index = tables.evaluated[step]
            self.step = step
            self.now = index
            self.step_start = (len(self.evaluations), self.live, self.peak, self.fits)
            if is_source[index]:
                self.allocate(index)
                self.emit(index, False)
                continue
            operands = inputs[index]
            self.gather(operands)
            self.allocate(index)
            self.emit(index, False)
            self.unpin(operands)
            self.release_dead()

    def _snapshot(self) -> None:
        """Records the state at the start of the current step, which is the state now
        without the evaluations this step has emitted so far (none of which evicted
        anything: this is called at the step's first eviction)."""
        evaluations, live, peak, fits = self.step_start
        resident = self.resident.copy()
        held = self.held.copy()
        candidates = self.candidates.copy()
        for node, _, _ in self.evaluations[evaluations:]:
            resident[node] = _NONE
            storage = self.tables.storage[node]
            held[storage] -= 1
            if not held[storage]:
                candidates.discard(storage)
        self.snapshots[self.step] = _Snapshot(
            resident, held, self.evicted_by.copy(), candidates, evaluations, live, peak, fits
        )

    def _restore(self, step: int) -> None:
        """Puts the walk back at the start of `step`, as the snapshot of it says."""
        snapshot = self.snapshots[step]
        self.resident = snapshot.resident.copy()
        self.held = snapshot.held.copy()
        self.evicted_by = snapshot.evicted_by.copy()
        # The snapshot may predate storages protected since.
        self.candidates = snapshot.candidates - self.protected
        del self.evaluations[snapshot.evaluations :]
        self.live, self.peak, self.fits = snapshot.live, snapshot.peak, snapshot.fits
        self.pinned = [0] * self.tables.count
        self.restore_costs = {}
        # The walk goes back in time: a next use kept now may lie before a later step.
        self.next_uses = {}
        self.chain = []
        self.arrived = []
        self.snapshots = {before: kept for before, kept in self.snapshots.items() if before <= step}
        self.first_evicted = {
            storage: first for storage, first in self.first_evicted.items() if first < step
        }

    def gather(self, operands: Sequence[int]) -> None:
        """Makes every operand resident, pinning each as soon as it is, so that
        recomputing a later operand never evicts an earlier one."""
        storage = self.tables.storage
        for operand in operands:
            if self.resident[operand] == _NONE:
                self.recompute(operand)
            self.pinned[storage[operand]] += 1

    def unpin(self, operands: Sequence[int]) -> None:
        storage = self.tables.storage
        for operand in operands:
            self.pinned[storage[operand]] -= 1

    def recompute(self, index: int) -> None:
        """Makes `index` resident again: its missing operands first (recomputed in turn,
        depth first, each pinned once resident), then its own kernel.

        A loop over an explicit stack rather than recursion: a chain of evicted
        ancestors is as long as the graph is deep (a 500-layer MLP's is thousands of
        nodes), past Python's recursion limit. It decides as the recursion did: each
        frame is a node and the position of the next operand to gather; an operand
        that is missing is recomputed (a frame above) before the frame moves on, and
        it is resident when the frame resumes, since nothing runs in between."""
        inputs = self.tables.inputs
        storage = self.tables.storage
        resident = self.resident
        pinned = self.pinned
        chain = self.chain
        chain.append(index)
        frames = [[index, 0]]
        while frames:
            frame = frames[-1]
            node, position = frame
            operands = inputs[node]
            if position < len(operands):
                operand = operands[position]
                if resident[operand] == _NONE:
                    chain.append(operand)
                    frames.append([operand, 0])
                    continue
                pinned[storage[operand]] += 1
                frame[1] = position + 1
                continue
            self.allocate(node)
            # Every node is first evaluated at its own step, before any step that reads
            # it, so whatever a step recomputes was evaluated before.
            self.emit(node, True)
            self.unpin(operands)
            chain.pop()
            frames.pop()

    def allocate(self, index: int) -> None:
        """Evicts until the buffer of `index` fits, then counts it as live."""
        tables = self.tables
        storage = tables.storage[index]
        need = 0 if self.held[storage] else tables.size[storage]
        need += tables.workspace[index]
        while need:
            wanted = self.live + need
            if wanted <= self.budget:
                self.within = max(self.within, wanted)
                break
            self.over = min(self.over, wanted)
            victim = self.victim()
            if victim is None:
                for node in self.chain:
                    cause = self.evicted_by[node]
                    if cause != _NONE and cause not in self.protected:
                        raise StuckError(cause)
                self.fits = False
                break
            self.evict(victim)
        self.peak = max(self.peak, self.live + need)

    def emit(self, index: int, recomputation: bool) -> None:
        tables = self.tables
        resident = self.resident
        self.work += 1
        if recomputation and (
            len(self.evaluations) > self.work_limit or self.work > self.restart_work_limit
        ):
            raise ThrashError(len(self.evaluations))
        inputs = tuple(map(resident.__getitem__, tables.inputs[index]))
        self.evaluations.append((index, inputs, recomputation))
        storage = tables.storage[index]
        self.next_uses.pop(storage, None)
        if not self.held[storage]:
            self.live += tables.size[storage]
            if tables.evictable[storage] and storage not in self.protected:
                self.candidates.add(storage)
        self.held[storage] += 1
        resident[index] = len(self.evaluations) - 1
        self._forget_restore_costs(index)
        self.arrived.append(index)

    def drop(self, index: int) -> None:
        tables = self.tables
        self.resident[index] = _NONE
        self.evicted_by[index] = _NONE
        self._forget_restore_costs(index)
        storage = tables.storage[index]
        self.next_uses.pop(storage, None)
        self.held[storage] -= 1
        if not self.held[storage]:
            self.live -= tables.size[storage]
            self.candidates.discard(storage)

    def evict(self, storage: int) -> None:
        if self.step not in self.snapshots:
            self._snapshot()
        self.first_evicted.setdefault(storage, self.step)
        for index in self.tables.members[storage]:
            if self.resident[index] != _NONE:
                self.drop(index)
                self.evicted_by[index] = storage

    def next_use(self, index: int) -> int | None:
        readers = self.tables.readers[index]
        position = bisect_right(readers, self.now)
        return readers[position] if position < len(readers) else None

    def release_dead(self) -> None:
        """Drops every resident buffer that no later kernel of the plan reads (a later
        recomputation that needs one recomputes it). Only two kinds can have died in
        this step: those whose last reader it ran, and those it made resident. (Nothing
        is pinned between steps.)"""
        tables = self.tables
        candidates = [*tables.dying[self.now], *self.arrived]
        self.arrived = []
        for index in candidates:
            if self.resident[index] == _NONE:
                continue
            if tables.is_source[index] or index in tables.roots:
                continue
            if self.next_use(index) is None:
                self.drop(index)

    def victim(self) -> int | None:
        """The storage to evict: the lowest-numbered candidate no later kernel reads, or
        else the one with the smallest h (see `remat_schedule`), ties to the lower
        number; None when every candidate is pinned."""
        tables = self.tables
        now = self.now
        resident = self.resident
        members = tables.members
        readers = tables.readers
        unused: int | None = None
        # Each candidate's bound on h: its own kernel alone, over its bytes times the
        # steps to its next use (restoring its missing operands only adds to it).
        bounded: list[tuple[float, int, int]] = []
        pinned = self.pinned
        next_uses = self.next_uses
        for storage in self.candidates:
            if pinned[storage]:
                continue
            # A kept next use holds while now has not reached it (None: for ever, until
            # a node of the storage arrives or leaves, which forgets it).
            nearest = next_uses.get(storage, _NONE)
            if nearest == _NONE or (nearest is not None and nearest <= now):
                nearest = None
                for index in members[storage]:
                    if resident[index] == _NONE:
                        continue
                    reading = readers[index]
                    position = bisect_right(reading, now)
                    if position < len(reading) and (nearest is None or reading[position] < nearest):
                        nearest = reading[position]
                next_uses[storage] = nearest
            if nearest is None:
                if unused is None or storage < unused:
                    unused = storage
            elif unused is None:
                spread = tables.size[storage] * (nearest - now)
                bounded.append((tables.cost[storage] / spread, storage, spread))
        if unused is not None:
            return unused
        best: int | None = None
        best_score = 0.0
        # In the order of their bounds, until a bound exceeds the best h found: a
        # correctly rounded division never decreases as its numerator grows, so the h of
        # every candidate left is larger still.
        for bound, storage, spread in sorted(bounded):
            if best is not None and bound > best_score:
                break
            base = tables.cost[storage]
            for operand in tables.inputs[storage]:
                base += self.restore_cost(operand)
            # The very float expression the greedy was first written with, so equal and
            # nearly equal ratios order the same way.
            score = base / spread
            if best is None or score < best_score or (score == best_score and storage < best):
                best, best_score = storage, score
        return best

    def restore_cost(self, index: int) -> int:
        """What making `index` resident again costs now: nothing if it is, else its own
        kernel and those of its missing ancestors (an ancestor reached by two paths
        counts twice, as the greedy was first written). Worked out over an explicit
        stack, ancestors first, as deep as the graph (see `recompute`)."""
        resident = self.resident
        if resident[index] != _NONE:
            return 0
        known = self.restore_costs
        found = known.get(index)
        if found is not None:
            return found
        inputs = self.tables.inputs
        cost = self.tables.cost
        pending = [index]
        while pending:
            node = pending[-1]
            if node in known:
                pending.pop()
                continue
            missing = [
                operand
                for operand in inputs[node]
                if resident[operand] == _NONE and operand not in known
            ]
            if missing:
                pending.extend(missing)
                continue
            total = cost[node]
            for operand in inputs[node]:
                if resident[operand] != _NONE:
                    continue
                total += known[operand]
            known[node] = total
            pending.pop()
        return known[index]

    def _forget_restore_costs(self, index: int) -> None:
        """Forgets the kept restore costs that depend on whether `index` is resident:
        its own and its descendants'. A kept cost's evicted operands have kept costs
        too, so the descendants to forget are reached through kept costs alone."""
        known = self.restore_costs
        if not known:
            return
        known.pop(index, None)
        readers = self.tables.readers
        pending = [index]
        while pending:
            for reader in readers[pending.pop()]:
                if reader in known:
                    del known[reader]
                    pending.append(reader)

"""RematSearch: the schedules a remat lowering tries, and the cheapest that fits a budget.

The greedy (`remat_schedule`) is not monotone in the budget it walks under, and its
simulation is conservative, so a walk under a larger budget often places within a
smaller one (gpt: the walk at 95% fits 80% with 17 recomputations where the walk at 80%
overshoots once placed, and the lowering fell to the floor's 314). So the search does
not trust one walk: it keeps every schedule it lays out, and a budget gets the one
that fits it with the fewest recomputed FLOPs.

Which schedules are tried depends on the graph and not on the budget asked, so that a
smaller budget tries every schedule a larger one tries: the walks under the *ladder*,
`LADDER_STEPS - 1` budgets evenly spaced below the unconstrained plan's planned bytes,
from the top down to the highest rung at or below the budget (each rung with its
placement retries, see `fitting`). A budget below every rung that fits, and the floor
itself, take the floor's bisection as well, whose schedules join the candidates. So a
smaller budget never returns more recomputation than a plan a larger budget returned
that fits it: that plan is among its candidates too (the placement search stops at the
first placement within its target, so a plan placed within one target is placed
within every larger one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from topos.engine.arena import ALIGNMENT
from topos.engine.memory_plan import MemoryPlan
from topos.engine.remat_schedule import RematSchedule, RematScheduler
from topos.graph.node import Node

#: The ladder's spacing: rungs at k/LADDER_STEPS of the unconstrained planned bytes.
LADDER_STEPS = 32

#: How often a schedule is simulated again under a smaller budget when the arena's
#: placement overshoots the budget it was simulated for.
PLACEMENT_TRIES = 6


@dataclass(frozen=True)
class Candidate:
    """A schedule the search laid out: its program, its memory plan under the latest
    target it was placed for, its planned bytes and its recomputed FLOPs."""

    schedule: RematSchedule
    program: list[Node]
    memory: MemoryPlan
    planned_bytes: int
    extra_flops: int
    #: The order it was found in: the tie-break among equally cheap candidates.
    order: int
    #: The bytes `memory` was placed for (`lay_out`'s target): laid out again for
    #: them, the schedule gets this very placement (see `lowered_schedule`).
    target: int


LayOut = Callable[[RematSchedule, int], tuple[list[Node], MemoryPlan]]


class RematSearch:
    """The candidates of one plan (see the module): `cheapest(budget)` and `floor()`."""

    def __init__(
        self,
        scheduler: RematScheduler,
        lay_out: LayOut,
        extra_flops: Callable[[RematSchedule], int],
        unconstrained_bytes: int,
    ) -> None:
        self.scheduler = scheduler
        self.lay_out = lay_out
        self.extra_flops = extra_flops
        self.unconstrained_bytes = unconstrained_bytes
        #: Every schedule laid out, by identity of its evaluations.
        self.candidates: list[Candidate] = []
        self._seen: dict[int, int] = {}
        #: The rungs walked so far (the lowest last), and whether the ladder ended (a
        #: rung that nothing fits: the rungs below it are not walked).
        self._rungs_walked = 0
        self._ladder_ended = False
        self._floor: int | None = None

    def rung(self, step: int) -> int:
        """The budget of the ladder's `step`-th rung from the top (1 is the highest)."""
        return self.unconstrained_bytes * (LADDER_STEPS - step) // LADDER_STEPS

    def _keep(self, schedule: RematSchedule, target: int) -> Candidate:
        """Lays `schedule` out for `target` and keeps it (again, if placed before: the
        placement search may go further for a smaller target)."""
        program, memory = self.lay_out(schedule, target)
        planned = memory.arena_bytes + memory.root_bytes
        known = self._seen.get(id(schedule.evaluations))
        if known is not None:
            previous = self.candidates[known]
            if planned < previous.planned_bytes:
                self.candidates[known] = Candidate(
                    schedule, program, memory, planned, previous.extra_flops, previous.order, target
                )
            return self.candidates[known]
        candidate = Candidate(
            schedule,
            program,
            memory,
            planned,
            self.extra_flops(schedule),
            len(self.candidates),
            target,
        )
        self._seen[id(schedule.evaluations)] = len(self.candidates)
        self.candidates.append(candidate)
        return candidate

    def fitting(self, budget: int) -> Candidate | None:
        """The walk under `budget`, laid out; when the placement overshoots, walks again
        under a budget smaller by as much, a few times. Every schedule laid out is kept;
        the one that fits `budget` is returned (None: none did, or a walk thrashed)."""
        simulated = budget
        for _ in range(PLACEMENT_TRIES):
            schedule = self.scheduler.schedule(simulated)
            if schedule is None:  # the walk thrashed: smaller budgets would too
                return None
            candidate = self._keep(schedule, budget)
            if candidate.planned_bytes <= budget:
                return candidate
            simulated -= candidate.planned_bytes - budget
            if simulated <= 0:
                break
        return None

    def _walk_ladder_to(self, budget: int) -> None:
        """Walks the rungs from the top down to the highest at or below `budget` (or to
        the ladder's end)."""
        while not self._ladder_ended and self._rungs_walked < LADDER_STEPS - 1:
            step = self._rungs_walked + 1
            rung = self.rung(step)
            if self._rungs_walked and self.rung(self._rungs_walked) <= budget:
                return
            self._rungs_walked = step
            if rung <= 0 or self.fitting(rung) is None:
                self._ladder_ended = True

    def cheapest(self, budget: int) -> Candidate | None:
        """The candidate with the fewest recomputed FLOPs among those that fit `budget`
        (ties: fewer planned bytes, then found first), after walking the ladder down to
        `budget`; None when none fits."""
        self._walk_ladder_to(budget)
        # Laid out for a rung's target, a candidate a little over this budget may fit it
        # once its placement searches further (the search only goes on from where it
        # stopped, so a candidate placed within a budget is within every larger one).
        for candidate in list(self.candidates):
            if budget < candidate.planned_bytes <= budget + budget // 8:
                self._keep(candidate.schedule, budget)
        fitting = [c for c in self.candidates if c.planned_bytes <= budget]
        if not fitting:
            return None
        return min(fitting, key=lambda c: (c.extra_flops, c.planned_bytes, c.order))

    def least_possible_bytes(self) -> int:
        """A lower bound on any schedule's planned bytes: every root's buffer (the
        roots are fresh, beside the arena) and, at the kernel that needs the most, its
        operands', output's and workspace's bytes besides (distinct storages, roots and
        sources not counted twice)."""
        tables = self.scheduler
        storage, size = tables.storage, tables.size
        roots = {storage[root] for root in tables.roots}
        most = 0
        for index in tables.evaluated:
            if tables.is_source[index]:
                continue
            held = {storage[i] for i in (*tables.inputs[index], index)} - roots
            most = max(most, sum(size[s] for s in held) + tables.workspace[index])
        return sum(size[s] for s in roots) + most

    def floor(self) -> int:
        """The least planned bytes the search finds: the bisection of the budgets the
        greedy meets, or the least of the candidates' planned bytes, if lower (the
        greedy is not monotone); the unconstrained plan's bytes when nothing fits below
        them."""
        if self._floor is not None:
            return self._floor
        fitted = [c.planned_bytes for c in self.candidates]
        high = min(fitted, default=self.unconstrained_bytes)
        # The budgets below the least bytes any schedule can plan for are missed without
        # a walk: missing is a walk's costliest outcome (restarts), and the bisection
        # takes the same path (from nothing up: the greedy is not monotone, and a path
        # from the bound or through the ladder's rungs ends higher on llama, 4.62 MB
        # against 4.37).
        least = self.least_possible_bytes()
        low = 0
        while high - low > max(ALIGNMENT, high // 1000):
            middle = (low + high) // 2
            found = None if middle < least else self.fitting(middle)
            if found is None:
                low = middle
            else:
                high = found.planned_bytes
        self._floor = min(
            high, *(c.planned_bytes for c in self.candidates), self.unconstrained_bytes
        )
        return self._floor

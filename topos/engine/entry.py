"""Entry: a lowering request — roots to make readable, and the posture to lower in."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from topos.engine.budget import Budget
    from topos.engine.lowered_schedule import LoweredSchedule
    from topos.engine.plan import Plan
    from topos.engine.remat_plan import RematPlan
    from topos.graph.network import Network


class Entry:
    """Roots of a network; `backward()` asks for the retain posture the engine route needs."""

    def __init__(self, network: Network, roots: tuple[int, ...], posture: str = "forward") -> None:
        self.network = network
        self.roots = roots
        self.posture = posture

    def backward(self) -> Entry:
        """The same request in the retain posture: every buffer a backward sweep reads is kept."""
        return Entry(self.network, self.roots, "retain")

    def lower(self, budget: Budget | int | float | str | None = None) -> Plan:
        """Schedules the ancestors of the roots and decides when each buffer dies.

        With a `budget` a forward request is lowered in the remat posture: a RematPlan
        whose planned bytes (its arena and its roots' fresh buffers) stay within it,
        recomputing what it cannot keep. A budget is one of:

        - bytes, as an int (`48_000_000`) or text with a unit (`"48MiB"`, `"6.5MB"`);
        - a fraction of the unconstrained plan's planned bytes (the same request lowered
          without a budget), as a float (`0.6`) or a percentage (`"60%"`);
        - `"floor"`, the least any schedule reaches;
        - `"floor+50%"`, the floor plus that share of the way from the floor up to the
          unconstrained plan's planned bytes (never below the floor, whatever the graph);
        - a Budget.

        A budget below the floor raises BudgetError naming the floor in bytes; one that
        names no budget (`"lots"`) raises GraphError saying what a budget is.
        """
        from topos.engine.plan import Plan

        if budget is None:
            return Plan(self.network, self.roots, self.posture)
        from topos.errors import GraphError

        if self.posture != "forward":
            raise GraphError(
                "lower: a budget applies to forward plans (the recorded route's); the "
                "retain posture keeps every buffer by design"
            )
        from topos.engine.budget import Budget

        chosen = Budget.of(budget)  # a budget that says none is refused before lowering
        # The unconstrained plan first, then the remat modules: see `_unconstrained`.
        unconstrained = self._unconstrained()
        from topos.engine.remat_plan import RematPlan

        return RematPlan(self.network, self.roots, chosen, unconstrained=unconstrained)

    def lower_schedule(self, schedule: LoweredSchedule | str) -> RematPlan:
        """The remat plan a lowering chose (`RematPlan.lowered_schedule()`, or its
        `to_text()`), rebuilt without searching: the same evaluations into the same
        bytes as the plan it was written from. GraphError (one line) for a schedule
        lowered from another graph or roots, or one that is not a schedule."""
        from topos.errors import GraphError

        if self.posture != "forward":
            raise GraphError("lower_schedule: a remat schedule is a forward plan's")
        unconstrained = self._unconstrained()
        from topos.engine.lowered_schedule import LoweredSchedule
        from topos.engine.remat_plan import RematPlan

        if isinstance(schedule, str):
            schedule = LoweredSchedule.from_text(schedule)
        return RematPlan(self.network, self.roots, None, schedule, unconstrained=unconstrained)

    def _unconstrained(self) -> Plan:
        """The forward plan of these roots, lowered before a remat plan's modules are
        loaded: its lowering's transient objects set the high-water of the interpreter's
        object arenas, and the modules' objects (some 100 KiB), loaded before it, raised
        that peak by their size, a whole 1 MiB arena more in a worker's resident set at
        ready (remat at 100% on the sequence model template, 17 arenas to recorded's 16).
        Loaded after it, they take pools it freed."""
        from topos.engine.plan import Plan

        # Its steps compiled only if the remat plan runs them (nothing recomputed): a
        # plan that recomputes runs its own program, and compiling the unconstrained one
        # too held a second straight-line function at ready, and its compiler's peak.
        return Plan(self.network, self.roots, "forward", steps=False)

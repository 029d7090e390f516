"""What a remat lowering keeps between the budgets it tries (walks whose range covers
another budget, a memory planner and its placement search per schedule) changes none
of its plans: lowered with every schedule walked afresh by the plain reference greedy
and every arena placed afresh by the plain reference placement (both written from the
specification alone, in tests/support/), each plan is the same.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.engine.test_remat_plan import convnet, recorded_network
from tests.support.greedy_reference import reference_schedule
from tests.support.placement_reference import reference_place
from tests.support.random_graphs import Program, programs
from topos.engine import memory_plan, remat_plan, remat_schedule
from topos.engine.budget import Budget
from topos.engine.remat_plan import RematPlan
from topos.errors import BudgetError


class _AfreshScheduler:
    """RematScheduler's interface, every schedule walked by the reference greedy (its
    tables, which the floor's lower bound reads, a RematScheduler's)."""

    def __init__(self, *tables) -> None:
        self.tables = tables
        self._scheduler = remat_schedule.RematScheduler(*tables)

    def __getattr__(self, name: str):
        return getattr(self._scheduler, name)

    def schedule(self, budget: int):
        # The thrash rule is not a cache: a walk given up (WORK_LIMIT on any walk, a
        # stuck one included, and RESTART_WORK_LIMIT on all of them) is given up by a
        # scheduler that has walked nothing before. The final schedule's length alone
        # does not tell: a stuck walk may pass the limit, and its restart end below it.
        if remat_schedule.RematScheduler(*self.tables).schedule(budget) is None:
            return None
        return reference_schedule(*self.tables, budget)


class _AfreshSearch:
    """PlacementSearch's interface, every placement the reference's."""

    def __init__(self, intervals) -> None:
        self.intervals = intervals

    def placement(self, target=None):
        return reference_place(self.intervals, target=target)


class _AfreshPlanner:
    """MemoryPlanner's interface, a new planner (and search) for every budget."""

    def __init__(self, *arguments) -> None:
        self.arguments = arguments

    def plan(self, budget=None):
        return memory_plan.MemoryPlanner(*self.arguments).plan(budget)


def _described(network, roots, budget: Budget):
    try:
        plan = RematPlan(network, roots, budget)
    except BudgetError as error:
        return str(error)
    return (
        plan.schedule,
        dataclasses.asdict(plan.memory),
        plan.planned_bytes,
        plan.floor_bytes,
        plan.recomputations,
        plan.flops,
        plan.extra_flops,
        plan.describe(),
    )


def _afresh(network, roots, budget: Budget):
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(remat_plan, "RematScheduler", _AfreshScheduler)
        patched.setattr(remat_plan, "MemoryPlanner", _AfreshPlanner)
        patched.setattr(memory_plan, "PlacementSearch", _AfreshSearch)
        return _described(network, roots, budget)


#: A graph hypothesis found where a stuck walk passed WORK_LIMIT and its restart ended
#: below it: the reference, judged by the final schedule's length, met a budget the
#: simulation rightly gave up, and the floors read 1600 against 1728 bytes.
_STUCK_WALK = Program(
    shapes=((3, 2, 3, 3), (2, 1, 1, 3), (2, 3, 1)),
    steps=(
        ("narrow", (0,), {"axis": 1, "start": 0, "length": 1}),
        ("unsqueeze_permute", (1,), {"shape": (2, 1, 1, 3), "axes": (1, 3, 0, 2)}),
        ("number_left", (2,), {"operator": "*", "number": 2.0}),
        ("unsqueeze_squeeze", (1,), {"axis": -5}),
        ("clamp", (4,), {"low": -0.5, "high": 0.75}),
        ("unsqueeze_squeeze", (1,), {"axis": -5}),
        ("batched_gram", (6,), {}),
        ("sub", (5, 2), {}),
        ("clamp", (8,), {"low": -0.5, "high": None}),
        ("heaviside", (8,), {}),
        ("permute", (10,), {"axes": (0, 2, 1)}),
        ("einsum", (8, 6), {"equation": "ij,ik->jk"}),
        ("tensor_power", (3, 3), {}),
    ),
    terms=(None, 5, 4, 3),
    seed=332106,
    leaves=(),
    second_order=True,
)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(leaves=True, second_order=True), st.floats(0.2, 1.0))
@example(_STUCK_WALK, 0.3122120103085861)
def test_random_graphs_lower_as_without_the_caches(program: Program, fraction: float):
    network, roots = recorded_network(program)
    roots = network.entry(roots).roots
    for budget in (Budget(fraction=fraction), Budget()):
        assert _described(network, roots, budget) == _afresh(network, roots, budget)


def test_a_convnet_lowers_as_without_the_caches():
    network, adjoints, _ = convnet()
    roots = network.entry(adjoints.roots()).roots
    for budget in (Budget(fraction=0.5), Budget(fraction=0.7), Budget()):
        assert _described(network, roots, budget) == _afresh(network, roots, budget)

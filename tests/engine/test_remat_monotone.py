"""Remat is monotone in its budget by construction (topos/engine/remat_search.py): a
lowering returns the cheapest schedule it finds that fits, and a smaller budget tries
every schedule a larger one tries, so it never returns more recomputation than a plan
a larger budget returned that fits it too.

gpt at 80% used to recompute 314 nodes (+92% FLOPs, planned at the floor) where the 75%
plan recomputed 17; a 4-layer MLP at 70-80% recomputed +36% where its 95% plan fits
those budgets with +18%.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.test_remat_on_a_deep_mlp import deep_mlp
from tests.engine.test_remat_plan import convnet, recorded_network
from tests.support.random_graphs import Program, programs
from tests.support.unseen_models import unseen_models
from topos.engine.budget import Budget
from topos.engine.remat_plan import RematPlan
from topos.errors import BudgetError
from topos.training.route_program import RouteProgram
from topos.workloads import resolve


def assert_monotone(network, roots, budgets) -> list[RematPlan]:
    """Lowers at each budget, largest first; each plan fits its budget and recomputes no
    more FLOPs than any plan of a larger budget that fits it."""
    plans: list[RematPlan] = []
    for budget in sorted(budgets, reverse=True):
        try:
            plan = RematPlan(network, roots, Budget(bytes=budget))
        except BudgetError:
            continue
        assert plan.planned_bytes <= plan.budget_bytes == budget
        for larger in plans:
            if larger.planned_bytes <= budget:
                assert plan.extra_flops <= larger.extra_flops, (budget, larger.budget_bytes)
        plans.append(plan)
    return plans


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(leaves=True), st.lists(st.floats(0.2, 1.0), min_size=2, max_size=6))
def test_random_graphs_are_monotone_in_the_budget(program: Program, fractions):
    network, roots = recorded_network(program)
    roots = network.entry(roots).roots
    unconstrained = RematPlan(network, roots, Budget(fraction=1.0)).unconstrained_bytes
    assert_monotone(network, roots, {max(1, int(f * unconstrained)) for f in fractions})


def test_a_convnet_and_a_deep_mlp_are_monotone_in_the_budget():
    network, adjoints, _ = convnet()
    roots = network.entry(adjoints.roots()).roots
    whole = RematPlan(network, roots, Budget(fraction=1.0)).unconstrained_bytes
    assert_monotone(network, roots, [whole * step // 20 for step in range(6, 20)])
    # 4 layers at 70% used to recompute +35% FLOPs where the 75% plan fits 70% with +17%.
    for layers in (4, 12):
        network, roots = deep_mlp(layers)
        whole = RematPlan(network, roots, Budget(fraction=1.0)).unconstrained_bytes
        plans = assert_monotone(network, roots, [whole * step // 20 for step in range(14, 20)])
        assert any(plan.recomputations for plan in plans)


def test_gpt_is_monotone_and_says_when_it_lands_far_below():
    workload = resolve("gpt")
    program = RouteProgram(workload.fitted(workload.dataset(None)), "recorded")
    network = program.network
    roots = network.entry(program.adjoints.roots()).roots
    whole = RematPlan(network, roots, Budget(fraction=1.0)).unconstrained_bytes
    plans = assert_monotone(network, roots, [whole * percent // 100 for percent in (95, 80, 75)])
    at_80 = next(plan for plan in plans if plan.budget_bytes == whole * 80 // 100)
    # Not the floor's 314 recomputations: the 95% walk's schedule, or one cheaper.
    assert at_80.extra_flops_fraction < 0.1
    for plan in plans:
        assert plan.far_below_budget == (plan.budget_unused > 0.1)
    # The summary says so (it names the floor, a bisection: one plan's is enough here).
    assert ("below the budget" in at_80.summary()[2]) == at_80.far_below_budget


@pytest.mark.parametrize("name", [name for name, _ in unseen_models()])
def test_models_written_as_a_user_writes_them_are_monotone_from_100_percent_to_the_floor(name):
    # A GRU with a layer norm, an attention block with residuals, a convnet with batch
    # norms (tests/support/unseen_models.py): no built-in's shape.
    network, roots = dict(unseen_models())[name]
    whole = RematPlan(network, roots, Budget(fraction=1.0)).unconstrained_bytes
    floor = RematPlan(network, roots, Budget.of("floor"))
    assert floor.planned_bytes <= floor.budget_bytes
    steps = 8
    budgets = {
        floor.budget_bytes + (whole - floor.budget_bytes) * k // steps for k in range(steps + 1)
    }
    plans = assert_monotone(network, roots, budgets)
    assert len(plans) == len(budgets)  # every budget from the floor up is taken
    assert plans[-1].budget_bytes == floor.budget_bytes
    assert plans[0].recomputations == 0
    assert any(plan.recomputations for plan in plans)

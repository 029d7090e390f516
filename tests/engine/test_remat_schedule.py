"""The remat schedule: the scheduler (candidate sets, walks resumed from snapshots, one
set of tables for every budget) gives exactly the schedules of a plain greedy written
from the specification alone (tests/support/greedy_reference.py), evaluation for
evaluation, with the same simulated peak and the same verdict on fitting."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.test_remat_plan import convnet, recorded_network
from tests.support.greedy_reference import (
    reference_schedule,
    reference_schedule_and_longest_walk,
)
from tests.support.random_graphs import Program, programs
from topos import Tape, Tensor
from topos.engine.plan import Plan
from topos.engine.remat_plan import _buffer_bytes, _planned_bytes
from topos.engine.remat_schedule import RematScheduler, schedule_recomputation
from topos.engine.remat_simulation import WORK_LIMIT


def simulation_inputs(network, roots):
    """What RematPlan hands the scheduler for `roots`, and the unconstrained plan's
    planned bytes."""
    base = Plan(network, roots, "forward")
    sizes, workspaces = _buffer_bytes(network.nodes, base.evaluated, base.memory, network.dtype)
    inputs = (
        network.nodes,
        base.evaluated,
        base.roots,
        base.memory.storage,
        base.memory.views,
        sizes,
        workspaces,
    )
    return inputs, _planned_bytes(base.memory)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    programs(leaves=True, second_order=True),
    st.lists(st.floats(0.0, 1.1), min_size=1, max_size=5),
)
def test_random_graphs_get_the_reference_schedules(program: Program, fractions):
    network, roots = recorded_network(program)
    inputs, unconstrained = simulation_inputs(network, network.entry(roots).roots)
    scheduler = RematScheduler(*inputs)
    for fraction in fractions:
        # Budgets close together: the later ones often fall within a walk's range.
        for budget in (int(fraction * unconstrained), int(fraction * unconstrained) + 64):
            found = scheduler.schedule(budget)
            expected, longest = reference_schedule_and_longest_walk(*inputs, budget)
            if found is None:
                # Given up as thrashing (WORK_LIMIT, RESTART_WORK_LIMIT): only where the
                # greedy, unbounded, does not meet the budget either, or one of its walks
                # (a stuck one, walked again after) passed WORK_LIMIT evaluations per node.
                thrashing = longest > WORK_LIMIT * len(inputs[1])
                assert thrashing or not expected.fits, budget
                continue
            assert found == expected, budget


def test_a_convnet_gets_the_reference_schedules_at_every_budget():
    # Below about half of the unconstrained bytes, recomputations get stuck and the
    # walks resume from their snapshots, often several times over.
    network, adjoints, _ = convnet()
    inputs, unconstrained = simulation_inputs(network, tuple(network.entry(adjoints.roots()).roots))
    scheduler = RematScheduler(*inputs)
    for step in range(41):
        budget = unconstrained * step // 40
        expected = reference_schedule(*inputs, budget)
        assert scheduler.schedule(budget) == expected, budget
        assert schedule_recomputation(*inputs, budget) == expected, budget


def test_a_tie_in_h_evicts_the_lower_numbered_storage():
    # exp and tanh of one input: the same cost, the same bytes, both read next by the
    # same node. At 768 bytes the sum needs one of them evicted; the lower-numbered
    # (the exp, node 1) goes, and is recomputed for the final add.
    tape = Tape()
    x = tape.input(Tensor.filled([64], 1.0))
    a, b = x.exp(), x.tanh()
    negated = -x
    total = negated.sum()
    both = a + b
    network = tape.into_network()
    inputs, _ = simulation_inputs(network, network.entry([both.symbol, total.symbol]).roots)
    schedule = RematScheduler(*inputs).schedule(768)
    assert schedule == reference_schedule(*inputs, 768)
    assert [(e.node, e.recomputation) for e in schedule.evaluations] == [
        (0, False),
        (1, False),
        (2, False),
        (3, False),
        (4, False),
        (1, True),
        (5, False),
    ]

"""The remat posture: a forward plan under a memory budget computes the same bytes as the
unconstrained plan (a recomputation runs the same kernel on the same operands), its
simulation and its memory plan keep within the budget, its arena is what it predicts,
what it hands out is the caller's own, and a budget below the floor is refused with the
floor named in bytes."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.engine.test_memory_plan import reference_payloads
from tests.support.allocations import peak_allocation
from tests.support.random_graphs import Program, programs
from tests.support.routes import record
from topos import Conv2d, GraphError, Linear, Shape, Tape, Tensor, cross_entropy, init, max_pool
from topos.engine.budget import Budget
from topos.engine.ownership import check_ownership
from topos.engine.remat_plan import RematPlan
from topos.errors import BudgetError

RECOMPUTED_LINE = re.compile(r"^\s*(\d+)\s+\S.*\s+recomputes (\d+), (kept|freed after \d+)$")
HEAD = re.compile(
    r"^plan: forward; (\d+) of (\d+) nodes evaluated, (\d+) recomputed "
    r"\(\+[\d.]+% FLOPs\), (\d+) readable$"
)
VOLUME = re.compile(r"^live volume: peak (\d+) elements at node (\d+), unconstrained (\d+)$")
BUDGET = re.compile(
    r"^budget: (\d+) bytes, planned (\d+) \(arena and roots\), floor (\d+), unconstrained (\d+)$"
)


def recorded_network(program: Program, dtype=np.float32):
    """The program's network and the roots of its recorded route."""
    arrays = [array.astype(dtype) for array in program.arrays()]
    tape, loss, symbols = record(program.build, arrays, program.seed, dtype)
    adjoints = tape.differentiate(loss, symbols)
    return tape.into_network(), adjoints.roots()


def convnet(rows: int = 8):
    """A small convolutional classifier's recorded route: the built-in models' shape, at
    a size the tests can run often."""
    tape = Tape()
    first = Conv2d(tape, init.normal(1, 0.3)(Shape([4, 3, 3, 3])), Tensor.filled([4], 0.0), 1, 1)
    second = Conv2d(tape, init.normal(2, 0.2)(Shape([8, 4, 3, 3])), Tensor.filled([8], 0.0), 1, 1)
    head = Linear(tape, init.kaiming(3)(Shape([8 * 4 * 4, 5])), Tensor.filled([5], 0.0))
    images = tape.input(Tensor.filled([rows, 3, 16, 16], 0.0))
    targets = tape.input(Tensor.selection([0] * rows, 5))
    hidden = max_pool(first.express(images).relu(), 2, 2)
    hidden = max_pool(second.express(hidden).relu(), 2, 2)
    loss = cross_entropy(head.express(hidden.reshape(rows, 8 * 4 * 4)), targets)
    parameters = first.parameters() + second.parameters() + head.parameters()
    adjoints = tape.differentiate(loss.symbol, parameters)
    network = tape.into_network()
    rng = np.random.default_rng(5)
    feeds = {
        images.symbol: Tensor([rows, 3, 16, 16], rng.standard_normal(rows * 768), np.float32),
        targets.symbol: Tensor.selection(list(rng.integers(0, 5, rows)), 5),
    }
    return network, adjoints, feeds


def assert_same_roots(network, plan, unconstrained, feeds=()) -> None:
    """Two runs of `plan` (the second over the arena the first wrote) give the bytes
    of `unconstrained`'s roots, and each root is the caller's own memory."""
    parameters = network.parameters()
    expected = unconstrained.forward(parameters, feeds)
    plan.forward(parameters, feeds)
    run = plan.forward(parameters, feeds)
    received = {}
    for root in plan.roots:
        payload = run.of(network.symbol(root)).numpy()
        reference = expected.of(network.symbol(root)).numpy()
        assert payload.tobytes() == reference.tobytes(), root
        received[f"%{root}"] = payload
    check_ownership(plan, received)


#: A graph whose `lower("floor")` says 512 bytes (its unconstrained plan's) where a budget
#: of 448 is met: the walk under the ladder's first rung (496) places within 448, and the
#: floor's bisection, walking 448 itself, does not (found by the search below).
_FLOOR_MISSED = (
    Program(
        shapes=((1, 1, 1, 1), (1, 2, 3)),
        steps=(
            ("unsqueeze_permute", (0,), {"shape": (1, 1, 1, 1), "axes": (0, 1, 2, 3)}),
            ("pad", (1,), {"widths": ((1, 1), (0, 1), (0, 1))}),
            ("abs", (0,), {}),
            ("argmax", (0,), {"axis": 0}),
        ),
        terms=(3, 2, None),
        seed=0,
        leaves=(),
        second_order=False,
    ),
    0.875,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(leaves=True, second_order=True), st.floats(0.0, 1.2))
@example(*_FLOOR_MISSED)
def test_random_graphs_under_random_budgets_give_the_unconstrained_bytes(
    program: Program, fraction: float
):
    network, roots = recorded_network(program)
    entry = network.entry(roots)
    unconstrained = entry.lower()
    floor = entry.lower(budget="floor")
    wanted = int(fraction * floor.unconstrained_bytes)
    if wanted < floor.floor_bytes:
        # Refused, naming a floor, or met: the floor is the least the greedy's search
        # finds, and the greedy is not monotone, so a search that walked other budgets
        # first may end its bisection elsewhere (seen: 960 bytes against 896 on a graph of
        # a few dozen nodes), or place a schedule walked under a larger budget within this
        # one (`_FLOOR_MISSED`: `lower("floor")` says 512 bytes, the ladder's first rung
        # places 448). Never a plan over the budget it was given.
        try:
            below = entry.lower(budget=max(wanted, 1))
        except BudgetError as refused:
            assert re.search(r"floor of [0-9]+ bytes", str(refused)), refused
        else:
            assert below.planned_bytes <= below.budget_bytes == max(wanted, 1)
            assert_same_roots(network, below, unconstrained)
        wanted = floor.floor_bytes
    plan = entry.lower(budget=wanted)
    assert isinstance(plan, RematPlan)
    assert plan.floor_bytes <= plan.budget_bytes
    # Checked by the memory plan every route gets: the arena and the roots fit.
    assert plan.planned_bytes == plan.arena_bytes + plan.root_bytes <= plan.budget_bytes
    # Not `simulated_peak <= budget`: the simulation is conservative (remat_schedule) and
    # the floor is the planned bytes of a schedule simulated under a larger budget, so the
    # floor's schedule may simulate above the floor; the memory plan has the last word.
    assert plan.live.peak <= unconstrained.live.retain_all
    assert_same_roots(network, plan, unconstrained)
    # And the bytes are the kernels' own, computed without any plan.
    reference = reference_payloads(network, unconstrained)
    run = plan.forward(network.parameters())
    for root in plan.roots:
        payload = run.of(network.symbol(root)).numpy()
        assert np.array_equal(payload, np.asarray(reference[root]), equal_nan=True), root


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(leaves=True), st.floats(0.0, 1.0))
def test_the_observed_live_buffers_never_exceed_the_simulation(program: Program, fraction):
    network, roots = recorded_network(program)
    entry = network.entry(roots)
    floor = entry.lower(budget="floor")
    plan = entry.lower(budget=max(int(fraction * floor.unconstrained_bytes), floor.floor_bytes))
    memory = plan.memory
    itemsize = network.dtype.itemsize
    held_bytes = []

    def observe(node: int, held: list[int]) -> None:
        # The buffers a run holds in the arena and in fresh roots (sources are not the
        # plan's memory; views share their base's).
        total = 0
        for index in set(held):
            if network.nodes[index].is_source:
                continue
            total += network.nodes[index].shape.volume * itemsize
        held_bytes.append(total)

    plan.forward(network.parameters(), observer=observe)
    assert max(held_bytes, default=0) <= plan.budget_bytes
    # The budget bounds the planned bytes (arena and roots, each buffer 64-byte aligned);
    # the live volume counts bare elements, so on graphs of tiny buffers a schedule within
    # the budget may hold more elements than the unconstrained one, never more bytes.
    assert memory.arena_bytes + memory.root_bytes <= plan.budget_bytes
    assert plan.planned_bytes <= plan.budget_bytes


def test_a_budget_below_the_floor_names_the_floor_in_bytes():
    network, adjoints, _ = convnet()
    entry = network.entry(adjoints.roots())
    floor = entry.lower(budget="floor")
    assert floor.floor_bytes < floor.unconstrained_bytes
    with pytest.raises(BudgetError) as refused:
        entry.lower(budget=floor.floor_bytes - 1)
    message = str(refused.value)
    assert "\n" not in message
    assert f"floor of {floor.floor_bytes} bytes" in message
    assert isinstance(refused.value, GraphError)
    assert entry.lower(budget=floor.floor_bytes).planned_bytes <= floor.floor_bytes
    # A default budget rises to the floor instead.
    lenient = entry.lower(budget=Budget(bytes=1, at_least_floor=True))
    assert lenient.budget_bytes == floor.floor_bytes


def test_budgets_in_every_form_and_the_ones_refused():
    network, adjoints, _ = convnet()
    entry = network.entry(adjoints.roots())
    half = entry.lower(budget=0.75)
    assert half.budget_bytes == int(0.75 * half.unconstrained_bytes)
    assert entry.lower(budget="75%").budget_bytes == half.budget_bytes
    assert entry.lower(budget="1GiB").budget_bytes == 2**30
    assert entry.lower(budget="1GiB").recomputations == 0
    for wrong in (0, -5, 0.0, -0.5, True, "half", "5 parsecs", "0%"):
        with pytest.raises(GraphError, match="budget"):
            entry.lower(budget=wrong)
    with pytest.raises(GraphError, match="forward plans"):
        network.entry(adjoints.roots()).backward().lower(budget=0.5)


def test_describe_has_a_line_per_evaluation_and_the_budget_lines():
    network, adjoints, _ = convnet()
    entry = network.entry(adjoints.roots())
    plan = entry.lower(budget="floor")
    assert plan.recomputations > 0
    *lines, head, volume, budget, _arena = plan.describe().splitlines()
    assert len(lines) == len(plan.program)
    recomputed = [RECOMPUTED_LINE.match(line) for line in lines]
    recomputed = [match for match in recomputed if match]
    assert len(recomputed) == plan.recomputations
    assert all(match.group(1) == match.group(2) for match in recomputed)
    evaluated, total, count, readable = map(int, HEAD.match(head).groups())
    assert (evaluated, total, count, readable) == (
        len(plan.evaluated),
        len(network.nodes),
        plan.recomputations,
        len(plan.roots),
    )
    peak, _node, unconstrained = map(int, VOLUME.match(volume).groups())
    assert (peak, unconstrained) == (plan.live.peak, plan.unconstrained.peak)
    wanted, planned, floor, whole = map(int, BUDGET.match(budget).groups())
    assert planned <= wanted == floor == plan.floor_bytes
    assert whole == plan.unconstrained.arena_bytes + plan.unconstrained.root_bytes
    assert plan.extra_flops > 0 and 0 < plan.extra_flops_fraction < 10


def test_the_measured_arena_is_the_prediction():
    network, adjoints, feeds = convnet(16)
    entry = network.entry(adjoints.roots())
    recorded = entry.lower()
    plan = entry.lower(budget=0.75)
    assert plan.recomputations > 0
    assert plan.planned_bytes <= plan.budget_bytes < recorded.predicted_training_bytes
    parameters = network.parameters()
    measured = {}
    for name, lowered in (("recorded", recorded), ("remat", plan)):
        first = peak_allocation(lambda lowered=lowered: lowered.forward(parameters, feeds))
        second = peak_allocation(lambda lowered=lowered: lowered.forward(parameters, feeds))
        assert sum(block.nbytes for block in lowered.arena_blocks()) == lowered.arena_bytes
        assert lowered.predicted_training_bytes == lowered.arena_bytes + lowered.root_bytes
        measured[name] = (first - lowered.predicted_training_bytes, second)
    # The first run allocates the arena and its roots, as predicted; what comes on top
    # (NumPy's small transients, the run's bookkeeping) is the recorded plan's too, and
    # recomputing adds no array: the buffer this plan recomputes is 442368 bytes, while
    # the run's Python bookkeeping varies by a few hundred bytes from run to run (16 KiB
    # of slack tells the two apart). Later runs allocate their roots and those transients.
    slack = 16 * 1024
    assert 0 <= measured["remat"][0] <= measured["recorded"][0] + slack
    assert measured["remat"][1] <= measured["recorded"][1] + slack


def test_a_full_budget_is_the_recorded_plan():
    network, adjoints, feeds = convnet()
    entry = network.entry(adjoints.roots())
    recorded = entry.lower()
    plan = entry.lower(budget=1.0)
    assert plan.recomputations == 0 and plan.extra_flops == 0
    assert plan.arena_bytes == recorded.arena_bytes
    assert plan.describe().splitlines()[:-4] == recorded.describe().splitlines()[:-3]
    assert_same_roots(network, plan, recorded, feeds)


def test_the_schedule_is_deterministic():
    network, adjoints, _ = convnet()
    entry = network.entry(adjoints.roots())
    first, second = entry.lower(budget="floor"), entry.lower(budget="floor")
    assert first.recomputations > 0
    assert first.schedule == second.schedule
    assert first.describe() == second.describe()


def test_the_floor_lower_prints_is_a_budget_it_takes_back():
    # Found by the sweep above: the floor is path-dependent, and a lowering under the
    # bytes `lower("floor")` printed sought its floor after the ladder, ended at 960
    # bytes against 832 and refused them. The refusal now retries the floor's own path.
    program = Program(
        shapes=((1, 1, 1), (), (1, 3, 3, 3)),
        steps=(
            ("unsqueeze_permute", (0,), {"shape": (1, 1, 1), "axes": (0, 1, 2)}),
            ("unsqueeze_permute", (3,), {"shape": (1, 1, 1), "axes": (0, 1, 2)}),
            ("number_left", (1,), {"operator": "/", "number": -1.5}),
            ("unsqueeze_permute", (2,), {"shape": (1, 3, 3, 3), "axes": (2, 3, 0, 1)}),
            ("abs", (0,), {}),
            ("affine", (6,), {}),
        ),
        terms=(2, 5, 2, None, 6, 4),
        seed=0,
        leaves=(),
        second_order=True,
    )
    network, roots = recorded_network(program)
    entry = network.entry(roots)
    floor = entry.lower(budget="floor")
    plan = entry.lower(budget=floor.floor_bytes)
    assert plan.planned_bytes <= floor.floor_bytes

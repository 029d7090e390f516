"""Remat is ready soon and holds nothing of its search: a budget that does not need the
floor does not seek it (a bisection of walks: on a GRU, seconds that delayed the
route's ready 3x), the floor is found on demand, the same as `lower("floor")` finds,
and once the plan is chosen no RematSearch (every schedule tried, its memory planner
and placement search) is alive, so remat at 100% holds recorded's memory at ready
(benchmarks/remat_ready.py measures the seconds and the resident set)."""

from __future__ import annotations

import gc

from tests.engine.test_remat_plan import convnet
from topos.engine.remat_search import RematSearch


def _searches_alive() -> int:
    gc.collect()
    return sum(isinstance(thing, RematSearch) for thing in gc.get_objects())


def test_a_budget_that_does_not_need_the_floor_does_not_seek_it():
    network, adjoints, _ = convnet()
    entry = network.entry(adjoints.roots())
    before = _searches_alive()
    whole = entry.lower(budget=1.0)
    cheaper = entry.lower(budget=0.8)
    assert whole.sought_floor_bytes is None and cheaper.sought_floor_bytes is None
    assert cheaper.recomputations > 0
    assert _searches_alive() == before
    floor = entry.lower(budget="floor")
    assert floor.sought_floor_bytes == floor.floor_bytes == floor.budget_bytes
    # Sought on demand, it is the floor lower("floor") finds.
    assert cheaper.floor_bytes == floor.floor_bytes == cheaper.sought_floor_bytes
    assert _searches_alive() == before


def test_a_summary_at_ready_does_not_seek_the_floor():
    # A worker reads its plan's summary after it marks ready: a floor sought then (a GRU
    # of one's own: a second of bisection, 14.7 MiB of heap) was counted in the steps' Δ
    # of remat at 100%, 114x recorded's.
    from tests.support.user_models import gru_workload
    from topos.training.training import Training

    training = Training(gru_workload, "remat", gru_workload.dataset(None), 1, "100%")
    plan = training.program.plan
    before = _searches_alive()
    (budget,) = [line for line in training.summary(seek_floor=False) if "budget" in line]
    assert ", floor not sought, " in budget
    assert plan.sought_floor_bytes is None and _searches_alive() == before
    # Asked for, it is sought and said.
    (budget,) = [line for line in training.summary() if "budget" in line]
    assert f", floor {plan.floor_bytes}, " in budget and plan.sought_floor_bytes is not None


def test_remat_at_100_percent_runs_the_compiled_steps_of_its_unconstrained_plan():
    # Nothing recomputed, its program is the unconstrained plan's: compiling it again held
    # a second copy of every step at ready (gpt: remat at 100% 1.1 MiB over recorded).
    import numpy as np

    from tests.support.user_models import gru_workload
    from topos import Tape

    dataset = gru_workload.load_dataset(None)
    tape = Tape()
    recording = gru_workload.record(tape, 8)
    adjoints = tape.differentiate(recording.loss, recording.parameters)
    network = tape.into_network()
    order = gru_workload.batches(dataset.train, 8, gru_workload.shuffle_state)
    feeds = gru_workload.feeds(dataset.train, order.indices(0), recording)
    whole = network.entry(adjoints.roots()).lower(budget=1.0)
    base = whole.unconstrained
    assert whole.recomputations == 0
    assert whole._compiled.execute.__code__ is base._compiled.execute.__code__
    assert whole._pending is base._pending
    # Each with an arena and kernels of its own: run in turn, both right.
    parameters = network.parameters()
    expected = network.entry(adjoints.roots()).lower()
    wanted = expected.forward(parameters, feeds).recorded_gradients(adjoints)
    for plan in (whole, base, whole):
        found = plan.forward(parameters, feeds).recorded_gradients(adjoints)
        for parameter, _ in adjoints:
            assert np.array_equal(found.of(parameter).numpy(), wanted.of(parameter).numpy())
    assert whole.arena_blocks()[0] is not base.arena_blocks()[0]

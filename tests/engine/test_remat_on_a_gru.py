"""Remat on a model of one's own: a GRU unrolled over 12 positions.

Near its floor the greedy used to thrash there: recomputing chains of the unrolled
steps that evicted each other, 860,000 recomputations for 1,084 nodes, so that
`lower("floor")` (and `topos check`, which checks remat at its floor) ran for many
minutes. A walk past `WORK_LIMIT` evaluations per node is now given up as a budget
not met; the floor it finds still trains bit-identically with the recorded route.
"""

from __future__ import annotations

import numpy as np

from tests.support.user_models import gru_workload
from topos import Tape
from topos.engine.remat_simulation import WORK_LIMIT


def _gru():
    dataset = gru_workload.load_dataset(None)
    tape = Tape()
    recording = gru_workload.record(tape, 8)
    adjoints = tape.differentiate(recording.loss, recording.parameters)
    network = tape.into_network()
    order = gru_workload.batches(dataset.train, 8, gru_workload.shuffle_state)
    feeds = gru_workload.feeds(dataset.train, order.indices(0), recording)
    return network, adjoints, feeds


def test_the_grus_floor_plan_is_bounded_and_trains_like_recorded():
    network, adjoints, feeds = _gru()
    recorded = network.entry(adjoints.roots()).lower()
    floor = network.entry(adjoints.roots()).lower("floor")
    assert len(floor.program) <= WORK_LIMIT * len(recorded.evaluated)
    assert floor.planned_bytes <= floor.budget_bytes
    assert floor.floor_bytes < floor.unconstrained_bytes  # it does save memory
    assert floor.recomputations > 0
    parameters = network.parameters()
    expected = recorded.forward(parameters, feeds).recorded_gradients(adjoints)
    found = floor.forward(parameters, feeds).recorded_gradients(adjoints)
    for parameter, _ in adjoints:
        assert np.array_equal(found.of(parameter).numpy(), expected.of(parameter).numpy())

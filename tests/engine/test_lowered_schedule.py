"""A remat plan rebuilt from its lowered schedule (`Entry.lower_schedule`) is the plan
the search chose: the same evaluations into the same bytes at the same offsets, and a
run of it computes the searched plan's bits. A schedule from another graph, or one
tampered with, is refused in one line.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support.user_models import gru_workload
from topos import Tape
from topos.engine.lowered_schedule import LoweredSchedule
from topos.errors import GraphError
from topos.workloads import resolve


def _recorded(workload, rows: int):
    """A workload's recorded network, its chain rule and one batch's feeds."""
    dataset = workload.load_dataset(None)
    tape = Tape()
    recording = workload.record(tape, rows)
    adjoints = tape.differentiate(recording.loss, recording.parameters)
    network = tape.into_network()
    order = workload.batches(dataset.train, rows, workload.shuffle_state)
    feeds = workload.feeds(dataset.train, order.indices(0), recording)
    return network, adjoints, feeds


def _assert_rebuilt_is_searched(network, adjoints, feeds, budget) -> None:
    searched = network.entry(adjoints.roots()).lower(budget)
    text = searched.lowered_schedule().to_text()
    rebuilt = network.entry(adjoints.roots()).lower_schedule(text)
    assert not rebuilt.searched and searched.searched
    assert rebuilt.schedule.evaluations == searched.schedule.evaluations
    assert rebuilt.planned_bytes == searched.planned_bytes
    assert rebuilt.budget_bytes == searched.budget_bytes
    assert rebuilt.memory.arena_bytes == searched.memory.arena_bytes
    assert rebuilt.memory.slots == searched.memory.slots
    assert rebuilt.memory.workspaces == searched.memory.workspaces
    assert rebuilt.recomputations == searched.recomputations
    assert rebuilt.sought_floor_bytes == searched.sought_floor_bytes
    # What the search spent is what the rebuilt plan says it took (where it was spent).
    assert rebuilt.search_seconds == searched.search_seconds
    parameters = network.parameters()
    expected = searched.forward(parameters, feeds).recorded_gradients(adjoints)
    found = rebuilt.forward(parameters, feeds).recorded_gradients(adjoints)
    for parameter, _ in adjoints:
        assert np.array_equal(found.of(parameter).numpy(), expected.of(parameter).numpy())


@pytest.mark.parametrize("budget", ["floor", "floor+25%", 0.8, 1.0])
def test_a_grus_plan_rebuilt_from_its_schedule_is_the_searched_one(budget):
    network, adjoints, feeds = _recorded(gru_workload, 8)
    _assert_rebuilt_is_searched(network, adjoints, feeds, budget)


@pytest.mark.parametrize("budget", [0.5, "floor+25%"])
def test_a_builtin_plan_rebuilt_from_its_schedule_is_the_searched_one(budget):
    network, adjoints, feeds = _recorded(resolve("gpt"), 4)
    _assert_rebuilt_is_searched(network, adjoints, feeds, budget)


def test_a_schedule_from_another_graph_is_refused_in_one_line():
    network, adjoints, _ = _recorded(gru_workload, 8)
    text = network.entry(adjoints.roots()).lower("floor+25%").lowered_schedule().to_text()
    # The same model recorded for other rows is another graph (other shapes).
    other, other_adjoints, _ = _recorded(gru_workload, 4)
    with pytest.raises(GraphError, match="lowered from another graph") as refused:
        other.entry(other_adjoints.roots()).lower_schedule(text)
    assert "\n" not in str(refused.value)


def test_a_tampered_or_foreign_schedule_is_refused_in_one_line():
    network, adjoints, _ = _recorded(gru_workload, 8)
    entry = network.entry(adjoints.roots())
    told = json.loads(entry.lower("floor+25%").lowered_schedule().to_text())
    # An evaluation that reads the wrong operand.
    evaluations = told["schedule"]["evaluations"]
    reader = next(
        position
        for position, (_, reads, _) in enumerate(evaluations)
        if len(reads) == 2 and evaluations[reads[0]][0] != evaluations[reads[1]][0]
    )
    evaluations[reader][1] = [evaluations[reader][1][1], evaluations[reader][1][0]]
    refusals = [json.dumps(told), "not a schedule", json.dumps({"format": 99})]
    for text in refusals:
        with pytest.raises(GraphError, match="lower_schedule: ") as refused:
            entry.lower_schedule(text)
        assert "\n" not in str(refused.value)


def test_the_schedule_reads_back_as_written():
    network, adjoints, _ = _recorded(gru_workload, 8)
    lowered = network.entry(adjoints.roots()).lower("floor").lowered_schedule()
    assert LoweredSchedule.from_text(lowered.to_text()) == lowered

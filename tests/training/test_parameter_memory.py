"""The training loop owns its parameters and updates them in place: the same bits as
the functional steps, and nobody else's payloads change."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.cli import tiny_workloads
from topos import SGD, Adam, Tape, Tensor
from topos.graph.parameter_gradients import ParameterGradients
from topos.training import Training
from topos.training.parameter_memory import ParameterMemory


class FunctionalSGD:
    """SGD as a user might write it: `step` only, no update in place."""

    def __init__(self) -> None:
        self.learning_rate = 0.0
        self._sgd = SGD(0.0)

    def step(self, parameters, gradients):
        self._sgd.learning_rate = self.learning_rate
        return self._sgd.step(parameters, gradients)


def functional_losses(workload, route, steps):
    """The trajectory as a loop of functional steps over immutable Parameters."""
    training = Training(workload, route, tiny_workloads.load_dataset(None), steps)
    parameters = training.program.network.parameters()
    optimizer = workload.optimizer()
    losses = []
    for step in range(steps):
        loss, gradients = training.program.compute(parameters, training.feeds(step))
        optimizer.learning_rate = float(workload.learning_rate(step, steps))
        parameters = optimizer.step(parameters, gradients)
        losses.append(int(loss.view(np.uint32)))
    return losses, parameters


@pytest.mark.parametrize("route", ["engine", "recorded"])
@pytest.mark.parametrize(
    "optimizer", [lambda: SGD(0.0), lambda: Adam(0.0), FunctionalSGD], ids=["sgd", "adam", "user"]
)
def test_training_in_place_follows_the_functional_trajectory_bit_for_bit(route, optimizer):
    workload = dataclasses.replace(tiny_workloads.sharded, optimizer=optimizer)
    steps = 6
    expected, parameters = functional_losses(workload, route, steps)
    training = Training(workload, route, tiny_workloads.load_dataset(None), steps)
    initial = {index: array.tobytes() for index, array in training.parameters.arrays().items()}
    assert [int(training.step(step).view(np.uint32)) for step in range(steps)] == expected
    for index, array in training.parameters.arrays().items():
        assert array.tobytes() == parameters.arrays()[index].tobytes()
        assert array.tobytes() != initial[index]
    # The network's own initial payloads are not the loop's memory: they never moved.
    network = training.program.network
    for index, array in network.parameters().arrays().items():
        assert array.tobytes() == initial[index]


def test_a_snapshot_is_left_alone_by_later_steps():
    training = Training(tiny_workloads.tiny, "recorded", tiny_workloads.load_dataset(None), 4)
    training.step(0)
    snapshot = training.snapshot()
    kept = {index: array.tobytes() for index, array in snapshot.arrays().items()}
    training.step(1)
    assert {index: array.tobytes() for index, array in snapshot.arrays().items()} == kept
    assert any(
        array.tobytes() != kept[index] for index, array in training.parameters.arrays().items()
    )


def test_a_gradient_sharing_the_parameters_memory_is_read_before_any_write():
    tape = Tape()
    first = tape.parameter(Tensor([4], [1.0, 2.0, 3.0, 4.0]))
    second = tape.parameter(Tensor([4], [10.0, 20.0, 30.0, 40.0]))
    (first + second).sum()
    network = tape.into_network()
    memory = ParameterMemory(network.parameters())
    old_first = memory.arrays[first.symbol.index].copy()
    # Both gradients are views of the first parameter's memory: the first is written
    # before the second is read, which must still see the old values.
    alias = Tensor.adopt(memory.arrays[first.symbol.index])
    gradients = ParameterGradients(
        network.origin, {first.symbol.index: alias, second.symbol.index: alias}
    )
    memory.update(SGD(0.5), gradients)
    expected = np.float32([10.0, 20.0, 30.0, 40.0]) - old_first * np.float32(0.5)
    assert memory.arrays[second.symbol.index].tobytes() == expected.tobytes()
    assert memory.arrays[first.symbol.index].tobytes() == (old_first * np.float32(0.5)).tobytes()

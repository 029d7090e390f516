"""A missing feed is an error naming each input, a default is used only when asked
for, and a feed of another dtype is refused the same way as an array or a Tensor
(issue 41). Before, a missing feed silently ran on the recorded default (zeros), and a
float64 array was silently cast while a float64 Tensor was refused."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.user_models import record_gru, record_resnet, resnet_workload
from topos import GraphError, Indices, Tape, Tensor
from topos.training import RouteProgram

ROWS = 2


def resnet(rows: int = ROWS):
    tape = Tape()
    recording = record_resnet(tape, rows)
    network = tape.into_network()
    images, targets = recording.images, recording.targets
    return network, recording, images, targets


def batch(network, images, targets, dtype=np.float32):
    generator = np.random.default_rng(3)
    shape = tuple(network.shape(images))
    return {
        images: generator.standard_normal(shape).astype(dtype),
        targets: Tensor.selection([0, 1] * (shape[0] // 2), network.shape(targets)[1]),
    }


@pytest.mark.parametrize("posture", ["forward", "retain"])
def test_a_missing_feed_names_each_input_and_where_it_was_recorded(posture):
    network, recording, images, targets = resnet()
    entry = network.entry([recording.loss])
    plan = (entry.backward() if posture == "retain" else entry).lower()
    fed = batch(network, images, targets)
    with pytest.raises(GraphError) as caught:
        plan.forward(network.parameters(), {images: fed[images]})
    message = str(caught.value)
    assert f"no feed for input: %{targets.index}" in message
    assert "user_models.py:" in message and "defaults=True" in message
    with pytest.raises(GraphError, match=f"2 inputs: %{images.index} .*; %{targets.index} "):
        plan.forward(network.parameters())


def test_a_default_is_used_when_asked_for():
    network, recording, images, targets = resnet()
    plan = network.entry([recording.loss]).lower()
    fed = batch(network, images, targets)
    everything = plan.forward(network.parameters(), defaults=True).of(recording.loss)
    by_name = plan.forward(
        network.parameters(),
        {images: np.zeros(tuple(network.shape(images)), np.float32)},
        defaults=[targets],
    ).of(recording.loss)
    assert everything == by_name
    fed_loss = plan.forward(network.parameters(), fed).of(recording.loss)
    assert fed_loss != everything


def test_index_inputs_of_a_users_gru_are_required_too():
    tape = Tape()
    recording = record_gru(tape, ROWS)
    network = tape.into_network()
    tokens, targets = recording.inputs["tokens"], recording.inputs["targets"]
    plan = network.entry([recording.loss]).lower()
    vocabulary = network.nodes[tokens.index].attributes["classes"]
    ids = Indices.zeros(list(network.shape(tokens)), vocabulary)
    with pytest.raises(GraphError, match=f"no feed for input: %{targets.index} "):
        plan.forward(network.parameters(), {tokens: ids})
    assert plan.forward(network.parameters(), {tokens: ids, targets: ids}) is not None


@pytest.mark.parametrize(
    "as_given", [lambda array: array, lambda array: Tensor.adopt(array)], ids=["array", "Tensor"]
)
def test_a_feed_of_another_dtype_is_refused_the_same_way_array_or_tensor(as_given):
    network, recording, images, targets = resnet()
    plan = network.entry([recording.loss]).lower()
    fed = batch(network, images, targets, np.float64)
    fed[targets] = Tensor.selection([0, 1], network.shape(targets)[1])
    with pytest.raises(TypeError) as caught:
        plan.forward(network.parameters(), {**fed, images: as_given(fed[images])})
    assert str(caught.value) == (
        f"forward: the feed for input %{images.index} {network.shape(images)} recorded at "
        f"{network.nodes[images.index].source} is float64; the network computes in "
        f"float32: cast it first (array.astype(np.float32))"
    )


def test_a_training_step_refuses_a_missing_feed_before_any_shard_runs():
    workload = resnet_workload
    program = RouteProgram(workload, "recorded")
    network = program.network
    recording = program.recording
    fed = batch(network, recording.images, recording.targets)
    with pytest.raises(GraphError, match=f"no feed for input: %{recording.targets.index} "):
        program.compute(program.network.parameters(), {recording.images: fed[recording.images]})

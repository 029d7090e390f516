"""`cifar10-winograd`: cifar10's model, data, batches and initial weights with its second
and third convolutions by Winograd. Its three routes train bit-identically, and its
losses stay within float32 drift of cifar10's, whose own are untouched (the pinned
cifar10 tests hold them)."""

from __future__ import annotations

import numpy as np

from topos.datasets import load_cifar10
from topos.training import Training
from topos.workloads import resolve

#: Two steps: the second's loss and the parameters carry the first's update (a third
#: proved nothing more).
STEPS = 2


def test_it_is_cifar10_with_winograd_in_its_16_and_32_channel_layers():
    variant, cifar10 = resolve("cifar10-winograd"), resolve("cifar10")
    assert variant.name == "cifar10-winograd"
    same = ("batch_size", "shuffle_state", "shards", "shard_processes", "learning_rate")
    assert all(getattr(variant, field) == getattr(cifar10, field) for field in same)
    assert cifar10.record.algorithm == "direct" and variant.record.algorithm == "winograd"


def test_its_routes_train_bit_identically_near_cifar10s_losses():
    dataset = load_cifar10(None)
    losses, parameters = {}, {}
    for route in ("engine", "recorded", "remat"):
        training = Training(resolve("cifar10-winograd"), route, dataset, STEPS)
        operations = [node.operation for node in training.program.network.nodes]
        assert operations.count("winograd_input") == 2 and operations.count("im2col") == 1
        losses[route] = [np.float32(training.step(step)) for step in range(STEPS)]
        parameters[route] = [
            training.parameters.of(symbol).numpy().tobytes()
            for symbol in training.recording.parameters
        ]
    assert losses["engine"] == losses["recorded"] == losses["remat"]
    assert parameters["engine"] == parameters["recorded"] == parameters["remat"]
    training = Training(resolve("cifar10"), "recorded", dataset, STEPS)
    direct = np.array([training.step(step) for step in range(STEPS)], dtype=np.float64)
    drift = np.abs(np.array(losses["engine"], dtype=np.float64) - direct) / direct
    # Float32 drift (1.3e-3 over 20 steps, README), not the same bits: Winograd ran.
    assert drift.max() < 1e-4 and losses["engine"] != [np.float32(loss) for loss in direct]

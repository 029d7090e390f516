"""300 steps of cifar10 on the synthetic default: both routes learn, bit-identically."""

import math

import numpy as np
import pytest

from topos.datasets import load_cifar10
from topos.training import Training
from topos.workloads import resolve

STEPS = 300


@pytest.fixture(scope="module")
def trajectories():
    dataset = load_cifar10(None)
    workload = resolve("cifar10")
    result = {}
    for route in ("engine", "recorded"):
        training = Training(workload, route, dataset, steps=STEPS)
        result[route] = np.array([training.step(step) for step in range(STEPS)], dtype=np.float32)
    return result


def test_both_routes_bring_the_loss_well_below_chance(trajectories):
    chance = math.log(10)
    for losses in trajectories.values():
        assert losses[-20:].mean() < 0.6 * chance


def test_the_routes_agree_at_every_step_bit_for_bit(trajectories):
    engine, recorded = trajectories["engine"], trajectories["recorded"]
    assert engine.view(np.uint32).tolist() == recorded.view(np.uint32).tolist()

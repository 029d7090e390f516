"""300 steps of cifar10 on the synthetic default: both routes learn, bit-identically.

One test, not two sharing a module fixture: pytest-xdist sends tests of one module to
either worker, and each worker would train both routes for 300 steps again (36 s)."""

import math

import numpy as np

from topos.datasets import load_cifar10
from topos.training import Training
from topos.workloads import resolve

STEPS = 300


def test_both_routes_bring_the_loss_well_below_chance_bit_for_bit():
    dataset = load_cifar10(None)
    workload = resolve("cifar10")
    trajectories = {}
    for route in ("engine", "recorded"):
        training = Training(workload, route, dataset, steps=STEPS)
        losses = [training.step(step) for step in range(STEPS)]
        trajectories[route] = np.array(losses, dtype=np.float32)
    chance = math.log(10)
    for route, losses in trajectories.items():
        assert losses[-20:].mean() < 0.6 * chance, route
    engine, recorded = trajectories["engine"], trajectories["recorded"]
    assert engine.view(np.uint32).tolist() == recorded.view(np.uint32).tolist()

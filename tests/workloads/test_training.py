"""Training a workload's routes: the seed's batch schedule, warm-up, and route parity."""

import numpy as np
import pytest

from topos.datasets import load_mnist, shuffle
from topos.training import RouteProgram, Training
from topos.workloads import resolve


@pytest.fixture(scope="module")
def mnist_data():
    return load_mnist(None)


def test_batches_follow_the_seeds_wrap_around_schedule(mnist_data):
    training = Training(resolve("mnist"), "engine", mnist_data, steps=10)
    order = np.arange(len(mnist_data.train))
    shuffle(order, 5)
    count = len(mnist_data.train)
    for step in (0, 1, 937, 2000):
        start = (step * 64) % (count - 64)
        assert np.array_equal(training.batch_indices(step), order[start : start + 64])


def test_routes_train_bit_identically_and_warm_up_changes_nothing(mnist_data):
    workload = resolve("mnist")
    losses = {}
    for route in ("engine", "recorded"):
        training = Training(workload, route, mnist_data, steps=8)
        if route == "recorded":
            training.warm_up()  # thrown away: the trajectory must not move
        losses[route] = [int(training.step(step).view(np.uint32)) for step in range(8)]
    assert losses["engine"] == losses["recorded"]
    assert len(set(losses["engine"])) > 1  # the loss actually moves


@pytest.mark.parametrize("name", ["mnist", "cifar10"])
def test_route_programs_count_their_nodes(name):
    engine = RouteProgram(resolve(name), "engine")
    recorded = RouteProgram(resolve(name), "recorded")
    assert engine.gradient_nodes == 0 and recorded.gradient_nodes > 0
    assert engine.forward_nodes == recorded.forward_nodes
    assert engine.plan.posture == "retain" and recorded.plan.posture == "forward"
    # Both routes shard alike, so one shard's plan is compared with one shard's plan:
    # liveness frees the recorded route's buffers, the retain posture keeps them all.
    assert engine.shards == recorded.shards == resolve(name).shards
    assert recorded.plan.peak < engine.plan.retain_all
    assert recorded.plan.predicted_training_bytes < engine.plan.predicted_training_bytes


def test_unknown_route_and_bad_steps_are_refused(mnist_data):
    with pytest.raises(ValueError, match="unknown route 'sideways'"):
        RouteProgram(resolve("mnist"), "sideways")
    with pytest.raises(ValueError, match="steps must be at least 1"):
        Training(resolve("mnist"), "engine", mnist_data, steps=0)

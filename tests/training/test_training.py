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


def test_a_workload_names_its_inputs_feeds_and_optimizer():
    """A regression workload: inputs named `points` and `values`, its own feeds, and Adam;
    both routes train it bit-identically and the loss falls."""
    from topos import Adam, Linear, Shape, Tensor, init
    from topos.datasets import Dataset, Split
    from topos.training import Recording, StepSchedule, Workload

    def record(tape, rows):
        layer = Linear(tape, init.xavier(3)(Shape([4, 1])), None)
        points = tape.input(Tensor.filled([rows, 4], 0.0))
        values = tape.input(Tensor.filled([rows, 1], 0.0))
        error = layer.express(points) - values
        loss = (error * error).mean()
        return Recording(
            inputs={"points": points.symbol, "values": values.symbol},
            loss=loss.symbol,
            parameters=layer.parameters(),
        )

    def split(count):
        labels = np.arange(count) % 2
        return Split(np.zeros((count, 1, 2, 2), np.uint8), labels, 2, (0.0,), (1.0,))

    def feeds(split, indices, recording):
        points = np.stack([np.sin(indices + k) for k in range(4)], axis=1).astype(np.float32)
        values = points @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)
        return {
            recording.inputs["points"]: Tensor.adopt(points),
            recording.inputs["values"]: Tensor.adopt(values),
        }

    workload = Workload(
        name="regression",
        description="a linear fit by Adam",
        record=record,
        load_dataset=lambda _: Dataset("fit", "synthetic", "synthetic", lambda: split(512), None),
        learning_rate=StepSchedule(0.05, 0.01),
        batch_size=16,
        feeds=feeds,
        optimizer=Adam,
    )
    losses = {}
    for route in ("engine", "recorded"):
        training = Training(workload, route, workload.load_dataset(None), 60)
        # Its own feeds may read any sample: the whole split stays.
        training.hold_batches()
        assert training.dataset.train.held == 512
        assert isinstance(training.optimizer, Adam)
        losses[route] = [training.step(step).tobytes() for step in range(60)]
    assert losses["engine"] == losses["recorded"]
    first, last = (np.frombuffer(losses["engine"][i], np.float32)[0] for i in (0, -1))
    assert last < first / 10


def test_holding_the_batches_keeps_the_images_the_steps_read_and_the_trajectory(mnist_data):
    workload = resolve("mnist")
    whole = Training(workload, "recorded", mnist_data, steps=6)
    held = Training(workload, "recorded", mnist_data, steps=6)
    held.hold_batches()
    read = np.unique(np.concatenate([held.batch_indices(step) for step in range(6)]))
    assert held.dataset.train.held == read.size < len(mnist_data.train)
    assert held.dataset.fingerprint == mnist_data.fingerprint
    losses = [[int(each.step(step).view(np.uint32)) for step in range(6)] for each in (whole, held)]
    assert losses[0] == losses[1]

"""The seed's cifar10 model trains bit-identically by both routes: 20 SGD steps on
deterministic CIFAR-shaped data, the same float32 loss bits at every step and the
same parameters at the end; and the recorded route's plan needs less memory."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topos import SGD, Conv2d, Linear, Shape, Tape, Tensor, cross_entropy, init, max_pool
from topos.splitmix64 import SplitMix64

STEPS = 20
BATCH = 64
CLASSES = 10
FILTERS = (16, 32, 64)
FLAT = FILTERS[2] * 4 * 4
LEARNING_RATE = 0.05


def dataset(steps: int = STEPS) -> tuple[np.ndarray, np.ndarray]:
    """CIFAR-shaped images in [-1, 1) and labels, from two splitmix64 streams."""
    count = steps * BATCH
    images = (SplitMix64(101).units(count * 3 * 32 * 32) * 2.0 - 1.0).astype(np.float32)
    labels = (SplitMix64(102).draws(count) % np.uint64(CLASSES)).astype(np.int64)
    return images.reshape(count, 3, 32, 32), labels


class Model:
    """The seed's model, seeds and all."""

    def __init__(self, tape: Tape) -> None:
        weights = [
            init.normal(21, math.sqrt(2 / 27))(Shape([FILTERS[0], 3, 3, 3])),
            init.normal(22, math.sqrt(2 / 144))(Shape([FILTERS[1], FILTERS[0], 3, 3])),
            init.normal(23, math.sqrt(2 / 288))(Shape([FILTERS[2], FILTERS[1], 3, 3])),
        ]
        self.convs = [
            Conv2d(tape, weight, Tensor.filled([filters], 0.0), 1, 1)
            for weight, filters in zip(weights, FILTERS)
        ]
        head = init.kaiming(24)
        self.head = Linear(tape, head(Shape([FLAT, CLASSES])), head(Shape([CLASSES])))

    def express(self, images):
        stage = images
        for conv in self.convs:
            stage = max_pool(conv.express(stage).relu(), 2, 2)
        return self.head.express(stage.reshape(BATCH, FLAT))

    def parameters(self):
        symbols = []
        for layer in (*self.convs, self.head):
            symbols += [layer.weights, layer.bias]
        return symbols


def train(route: str, images: np.ndarray, labels: np.ndarray):
    tape = Tape()
    model = Model(tape)
    image_input = tape.input(Tensor.filled([BATCH, 3, 32, 32], 0.0))
    target_input = tape.input(Tensor.selection([0] * BATCH, CLASSES))
    loss = cross_entropy(model.express(image_input), target_input)
    adjoints = tape.differentiate(loss, model.parameters()) if route == "recorded" else None
    network = tape.into_network()
    if adjoints is None:
        plan = network.entry([loss.symbol]).backward().lower()
    else:
        plan = network.entry(adjoints.roots()).lower()
    parameters = network.parameters()
    optimizer = SGD(LEARNING_RATE)
    losses = []
    for step in range(STEPS):
        batch = slice(step * BATCH, (step + 1) * BATCH)
        feeds = {
            image_input.symbol: Tensor.adopt(images[batch]),
            target_input.symbol: Tensor.selection(labels[batch], CLASSES),
        }
        run = plan.forward(parameters, feeds)
        losses.append(run.of(loss.symbol).scalar())
        if adjoints is None:
            gradients = run.backward(loss.symbol).parameters(parameters)
        else:
            gradients = run.recorded_gradients(adjoints)
        parameters = optimizer.step(parameters, gradients)
    final = [np.array(parameters.of(symbol).numpy()) for symbol in model.parameters()]
    initial = [np.array(network.parameters().of(s).numpy()) for s in model.parameters()]
    return {"losses": losses, "final": final, "initial": initial, "plan": plan}


@pytest.fixture(scope="module")
def trajectories():
    images, labels = dataset()
    return {route: train(route, images, labels) for route in ("engine", "recorded")}


def bits(value) -> str:
    return f"{np.float32(value).view(np.uint32):08x}"


def test_losses_are_bit_identical_at_every_step(trajectories):
    engine = [bits(loss) for loss in trajectories["engine"]["losses"]]
    recorded = [bits(loss) for loss in trajectories["recorded"]["losses"]]
    assert len(engine) == STEPS
    assert engine == recorded


def test_parameters_are_bit_identical_at_the_end(trajectories):
    engine, recorded = trajectories["engine"]["final"], trajectories["recorded"]["final"]
    assert len(engine) == len(recorded) == 8
    for position, (left, right) in enumerate(zip(engine, recorded)):
        assert left.dtype == right.dtype == np.float32
        assert left.tobytes() == right.tobytes(), f"parameter {position}"


def test_training_moves(trajectories):
    # Parity of a frozen model would prove little: the losses change and every
    # parameter moved.
    losses = [float(loss) for loss in trajectories["engine"]["losses"]]
    assert all(np.isfinite(losses))
    assert len({bits(loss) for loss in losses}) == STEPS
    for before, after in zip(trajectories["engine"]["initial"], trajectories["engine"]["final"]):
        assert not np.array_equal(before, after)


def test_recorded_peak_is_below_the_retain_total(trajectories):
    retain = trajectories["engine"]["plan"]
    forward = trajectories["recorded"]["plan"]
    assert retain.posture == "retain" and forward.posture == "forward"
    assert forward.live.peak < retain.live.retain_all
    assert forward.peak < retain.peak

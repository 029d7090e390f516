"""SGD is the seed's update bit for bit; Adam agrees with an independent float64 reference."""

from __future__ import annotations

import numpy as np
import pytest

from topos import SGD, Adam, Tape, Tensor

RNG = np.random.default_rng(2024)


def test_sgd_update_is_the_seeds_bit_for_bit():
    parameter = RNG.standard_normal(4096).astype(np.float32)
    gradient = RNG.standard_normal(4096).astype(np.float32)
    p, g = Tensor([4096], parameter), Tensor([4096], gradient)
    for learning_rate in (0.05, 0.005, 0.1, 0.01):
        # The seed: parameter - gradient * learning_rate.broadcast_like(gradient), with
        # the learning rate a float32 rank-0 tensor.
        seed = p - g * Tensor([], [learning_rate]).broadcast_like(g)
        updated = SGD(learning_rate).update(p, g)
        assert updated == seed
        assert (
            updated.numpy().tobytes()
            == (parameter - gradient * np.float32(learning_rate)).tobytes()
        )
        # Discriminating: a float64 product rounded once would differ somewhere.
        wide = (parameter - (gradient.astype(np.float64) * learning_rate)).astype(np.float32)
        assert wide.tobytes() != seed.numpy().tobytes()


def feeder(wrt_sets=None):
    """loss = sum(w1 * g1) + sum(w2 * g2): the gradient of each w is exactly its fed g.
    With `wrt_sets`, also records one set of adjoints per set of parameter names."""
    tape = Tape()
    w1 = tape.parameter(Tensor([3, 4], RNG.standard_normal(12), np.float32))
    w2 = tape.parameter(Tensor([5], RNG.standard_normal(5), np.float32))
    g1 = tape.input(Tensor.filled([3, 4], 0.0))
    g2 = tape.input(Tensor.filled([5], 0.0))
    loss = (w1 * g1).sum() + (w2 * g2).sum()
    names = {"w1": w1, "w2": w2}
    adjoints = [tape.differentiate(loss, [names[n] for n in wrt]) for wrt in (wrt_sets or [])]
    network = tape.into_network()
    symbols = {"w1": w1.symbol, "w2": w2.symbol, "g1": g1.symbol, "g2": g2.symbol}
    return network, symbols, loss.symbol, adjoints


def engine_gradients(network, symbols, loss, parameters, grads):
    plan = network.entry([loss]).backward().lower()
    feeds = {
        symbols["g1"]: Tensor([3, 4], grads[0], np.float32),
        symbols["g2"]: Tensor([5], grads[1], np.float32),
    }
    return plan.forward(parameters, feeds).backward(loss).parameters(parameters)


def follow_references(optimizer, fed, references, steps: int):
    """Steps `optimizer` on the feeder's (`fed`) `w1` and `w2` with gradients of changing
    magnitude for `steps` steps, stepping each float64 reference beside it, and holds
    every float32 parameter to its reference; returns the final parameters."""
    network, symbols, loss, _ = fed
    parameters = network.parameters()
    for step in range(steps):
        scale = 10.0 ** (step % 3 - 1)  # gradients of changing magnitude
        grads = [
            (RNG.standard_normal((3, 4)) * scale).astype(np.float32),
            (RNG.standard_normal(5) * scale).astype(np.float32),
        ]
        parameters = optimizer.step(
            parameters, engine_gradients(network, symbols, loss, parameters, grads)
        )
        for name, grad in zip(("w1", "w2"), grads):
            references[name].step(grad)
            value = parameters.of(symbols[name])
            assert value.dtype == np.float32
            np.testing.assert_allclose(value.numpy(), references[name].value, rtol=1e-5, atol=1e-6)
    assert optimizer.steps == steps
    return parameters


def test_sgd_step_makes_new_parameters():
    network, symbols, loss, _ = feeder()
    parameters = network.parameters()
    before = {name: parameters.of(symbols[name]).numpy().copy() for name in ("w1", "w2")}
    grads = [
        RNG.standard_normal((3, 4)).astype(np.float32),
        RNG.standard_normal(5).astype(np.float32),
    ]
    gradients = engine_gradients(network, symbols, loss, parameters, grads)
    assert gradients.of(symbols["w1"]).numpy().tobytes() == grads[0].tobytes()
    stepped = SGD(0.05).step(parameters, gradients)
    assert stepped is not parameters
    for name, grad in zip(("w1", "w2"), grads):
        assert parameters.of(symbols[name]).numpy().tobytes() == before[name].tobytes()
        expected = before[name] - grad * np.float32(0.05)
        assert stepped.of(symbols[name]).numpy().tobytes() == expected.tobytes()


def test_a_parameter_without_a_gradient_is_left_alone():
    network, symbols, _, (only_w1,) = feeder([["w1"]])
    parameters = network.parameters()
    feeds = {symbols["g1"]: Tensor([3, 4], RNG.standard_normal(12), np.float32)}
    plan = network.entry(only_w1.roots()).lower()
    run = plan.forward(parameters, feeds, defaults=[symbols["g2"]])
    gradients = run.recorded_gradients(only_w1)
    assert symbols["w2"] not in gradients
    for optimizer in (SGD(0.5), Adam(0.5)):
        stepped = optimizer.step(parameters, gradients)
        assert stepped.of(symbols["w2"]) is parameters.of(symbols["w2"])
        assert stepped.of(symbols["w1"]) != parameters.of(symbols["w1"])


class ReferenceAdam:
    """Kingma and Ba's Adam in float64, one parameter, its own step count."""

    def __init__(self, value, learning_rate, beta1, beta2, epsilon):
        self.value = np.asarray(value, np.float64)
        self.settings = (learning_rate, beta1, beta2, epsilon)
        self.first = np.zeros_like(self.value)
        self.second = np.zeros_like(self.value)
        self.count = 0

    def step(self, gradient):
        learning_rate, beta1, beta2, epsilon = self.settings
        gradient = np.asarray(gradient, np.float64)
        self.count += 1
        self.first = beta1 * self.first + (1 - beta1) * gradient
        self.second = beta2 * self.second + (1 - beta2) * gradient**2
        first = self.first / (1 - beta1**self.count)
        second = self.second / (1 - beta2**self.count)
        self.value = self.value - learning_rate * first / (np.sqrt(second) + epsilon)


@pytest.mark.parametrize(
    "settings", [(1e-3, 0.9, 0.999, 1e-8), (0.05, 0.8, 0.99, 1e-6)], ids=["defaults", "custom"]
)
def test_adam_against_a_float64_reference(settings):
    fed = network, symbols, _, _ = feeder()
    initial = network.parameters()
    references = {
        name: ReferenceAdam(initial.of(symbols[name]).numpy(), *settings) for name in ("w1", "w2")
    }
    parameters = follow_references(Adam(*settings), fed, references, 8)
    # The reference check is discriminating: the parameters really moved.
    initial = network.parameters().of(symbols["w1"]).numpy()
    assert np.max(np.abs(parameters.of(symbols["w1"]).numpy() - initial)) > 100 * 1e-6


def test_adam_corrects_each_parameter_by_its_own_update_count():
    # w2 gets no gradient on the first call; its first update must be a first Adam step.
    network, symbols, _, (only_w1, both) = feeder([["w1"], ["w1", "w2"]])
    parameters = network.parameters()
    settings = (0.01, 0.9, 0.999, 1e-8)
    references = {
        n: ReferenceAdam(parameters.of(symbols[n]).numpy(), *settings) for n in ("w1", "w2")
    }
    adam = Adam(*settings)
    for step in range(4):
        adjoints = only_w1 if step == 0 else both
        grads = [
            RNG.standard_normal((3, 4)).astype(np.float32),
            RNG.standard_normal(5).astype(np.float32),
        ]
        feeds = {
            symbols["g1"]: Tensor([3, 4], grads[0]),
            symbols["g2"]: Tensor([5], grads[1]),
        }
        run = network.entry(adjoints.roots()).lower().forward(parameters, feeds)
        parameters = adam.step(parameters, run.recorded_gradients(adjoints))
        references["w1"].step(grads[0])
        if step > 0:
            references["w2"].step(grads[1])
        for name in ("w1", "w2"):
            np.testing.assert_allclose(
                parameters.of(symbols[name]).numpy(), references[name].value, rtol=1e-5, atol=1e-7
            )


def test_step_takes_a_plain_mapping_of_gradients_like_parameter_gradients():
    from tests.graph.test_errors import small_network

    _, network, images, weights, _, loss = small_network()
    parameters = network.parameters()
    plan = network.entry([loss]).backward().lower()
    run = plan.forward(parameters, {images: Tensor.filled([2, 3], 1.0)})
    gradients = run.backward(loss).parameters(parameters)
    stepped = SGD(0.1).step(parameters, gradients)
    from_dict = parameters.step({weights: gradients.of(weights)}, SGD(0.1).update)
    assert from_dict.of(weights) == stepped.of(weights)
    assert from_dict.of(weights) != parameters.of(weights)

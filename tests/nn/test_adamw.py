"""AdamW agrees with an independent float64 reference of Loshchilov and Hutter's update
(decoupled decay), decays only the parameters it is told to, and counts steps per
parameter."""

from __future__ import annotations

import numpy as np
import pytest

from tests.nn.test_optimizers import engine_gradients, feeder, follow_references
from topos import AdamW


class ReferenceAdamW:
    """AdamW in float64 for one parameter: decay the value, then Adam's step."""

    def __init__(self, value, learning_rate, betas, epsilon, weight_decay):
        self.value = np.asarray(value, np.float64)
        self.settings = (learning_rate, *betas, epsilon, weight_decay)
        self.first = np.zeros_like(self.value)
        self.second = np.zeros_like(self.value)
        self.count = 0

    def step(self, gradient):
        learning_rate, beta1, beta2, epsilon, weight_decay = self.settings
        gradient = np.asarray(gradient, np.float64)
        self.count += 1
        self.value = self.value * (1 - learning_rate * weight_decay)
        self.first = beta1 * self.first + (1 - beta1) * gradient
        self.second = beta2 * self.second + (1 - beta2) * gradient**2
        first = self.first / (1 - beta1**self.count)
        second = self.second / (1 - beta2**self.count)
        self.value = self.value - learning_rate * first / (np.sqrt(second) + epsilon)


@pytest.mark.parametrize("weight_decay", [0.0, 0.1, 5.0])
def test_adamw_against_a_float64_reference(weight_decay):
    fed = network, symbols, _, _ = feeder()
    initial = network.parameters()
    # Only w1 (rank 2) decays, as the gpt workload decays only weights and embeddings.
    decays = {"w1": weight_decay, "w2": 0.0}
    references = {
        name: ReferenceAdamW(
            initial.of(symbols[name]).numpy(), 0.01, (0.9, 0.99), 1e-8, decays[name]
        )
        for name in ("w1", "w2")
    }
    adamw = AdamW(0.01, (0.9, 0.99), 1e-8, weight_decay, decays=lambda shape: shape.rank >= 2)
    follow_references(adamw, fed, references, 6)


def test_adamw_without_a_mask_decays_every_parameter():
    network, symbols, loss, _ = feeder()
    parameters = network.parameters()
    zero = [np.zeros((3, 4), np.float32), np.zeros(5, np.float32)]
    stepped = AdamW(0.1, weight_decay=0.5).step(
        parameters, engine_gradients(network, symbols, loss, parameters, zero)
    )
    for name in ("w1", "w2"):
        np.testing.assert_allclose(
            stepped.of(symbols[name]).numpy(), parameters.of(symbols[name]).numpy() * 0.95
        )

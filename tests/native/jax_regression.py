"""A JAX step as a user writes one, for the tests: a two-layer regression in plain
`jax.numpy`, each layer a block the checkpointing routes may wrap (`remat`), the hidden
layer named for `checkpoint-names:hidden`, and a route of the user's own."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name

from topos.native import JaxWorkload, sgd


def parameters(key):
    first, second = jax.random.split(key)
    return {
        "hidden": {"weight": jax.random.normal(first, (8, 16)) * 0.3, "bias": jnp.zeros(16)},
        "out": {"weight": jax.random.normal(second, (16, 1)) * 0.3, "bias": jnp.zeros(1)},
    }


def layer(weights, inputs):
    return jnp.tanh(inputs @ weights["weight"] + weights["bias"])


def loss(parameters, inputs, targets, remat=lambda block: block):
    hidden = checkpoint_name(remat(layer)(parameters["hidden"], inputs), "hidden")
    predictions = hidden @ parameters["out"]["weight"] + parameters["out"]["bias"]
    return jnp.mean((predictions - targets) ** 2)


def data(directory):
    inputs = np.random.default_rng(3).standard_normal((64, 8)).astype(np.float32)
    return inputs, np.sin(inputs.sum(axis=1, keepdims=True))


def everything_saved(loss):
    """The user's own route: the whole loss under jax.checkpoint, everything saved."""
    return jax.checkpoint(loss, policy=jax.checkpoint_policies.everything_saveable)


workload = JaxWorkload(
    name="jax-regression",
    parameters=parameters,
    loss=loss,
    optimizer=sgd(0.1, momentum=0.9),
    data=data,
    batch_size=8,
    extra_routes={"everything-saved": everything_saved},
)

"""A model of a kind the JAX guide does not show, written from it alone as a new user would
(issue 48): an MLP-mixer on 8x8 'images' cut into 16 patches of 2x2x3, token-mixing and
channel-mixing MLPs with LayerNorm, dropout in the channel MLP (its hidden values named
for `checkpoint-names:hidden`), a mean-pooled head; on small sizes for the tests."""

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

from topos.native import JaxWorkload, adam

PATCHES, PATCH, WIDTH, TOKENS_HIDDEN, CHANNELS_HIDDEN, CLASSES, LAYERS = 16, 12, 32, 32, 64, 5, 1
DROPOUT = 0.1


def dense(key, inputs, outputs):
    return {
        "w": jax.random.normal(key, (inputs, outputs)) / jnp.sqrt(inputs),
        "b": jnp.zeros(outputs),
    }


def parameters(key):
    keys = jax.random.split(key, 2 + 4 * LAYERS)
    layers = []
    for index in range(LAYERS):
        k = keys[2 + 4 * index : 6 + 4 * index]
        layers.append(
            {
                "norm1": {"scale": jnp.ones(WIDTH), "shift": jnp.zeros(WIDTH)},
                "token1": dense(k[0], PATCHES, TOKENS_HIDDEN),
                "token2": dense(k[1], TOKENS_HIDDEN, PATCHES),
                "norm2": {"scale": jnp.ones(WIDTH), "shift": jnp.zeros(WIDTH)},
                "channel1": dense(k[2], WIDTH, CHANNELS_HIDDEN),
                "channel2": dense(k[3], CHANNELS_HIDDEN, WIDTH),
            }
        )
    return {
        "stem": dense(keys[0], PATCH, WIDTH),
        "layers": layers,
        "head": dense(keys[1], WIDTH, CLASSES),
    }


def layer_norm(p, x):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(variance + 1e-5) * p["scale"] + p["shift"]


def apply(p, x):
    return x @ p["w"] + p["b"]


def mixer_layer(layer, x, key):
    y = layer_norm(layer["norm1"], x).swapaxes(1, 2)  # [batch, width, patches]
    y = apply(layer["token2"], jax.nn.gelu(apply(layer["token1"], y)))
    x = x + y.swapaxes(1, 2)
    y = checkpoint_name(
        jax.nn.gelu(apply(layer["channel1"], layer_norm(layer["norm2"], x))), "hidden"
    )
    keep = jax.random.bernoulli(key, 1 - DROPOUT, y.shape)
    y = jnp.where(keep, y / (1 - DROPOUT), 0)
    return x + apply(layer["channel2"], y)


def loss(parameters, images, labels, *, key, remat):
    patches = images.reshape(images.shape[0], PATCHES, PATCH)
    x = apply(parameters["stem"], patches)
    for index, layer in enumerate(parameters["layers"]):
        x = remat(mixer_layer)(layer, x, jax.random.fold_in(key, index))
    logits = apply(parameters["head"], x.mean(1))
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], 1))


def data(directory):
    key = jax.random.key(5)
    images = jax.random.normal(key, (64, 8, 8, 3))
    labels = (jnp.abs(images[:, :4, :4, 0].sum((1, 2))) * 2).astype(jnp.int32) % CLASSES
    return images, labels


workload = JaxWorkload(
    name="jax-mixer",
    parameters=parameters,
    loss=loss,
    optimizer=adam(2e-3),
    data=data,
    batch_size=8,
)

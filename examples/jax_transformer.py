"""A small transformer written in plain JAX, graded by topos route by route.

    topos grade --workload examples/jax_transformer.py --steps 20 \
        --routes jit,checkpoint-nothing-saveable,checkpoint-dots-saveable,checkpoint-names:attention

topos trains each route in a process of its own from the same initial parameters, on
the same batches in the same order, and says whether the checkpointed steps follow the
plain jitted one (bit for bit, or within a tolerance), what they cost in time and what
they save in memory. Nothing below imports topos but the workload's description at the
end.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name

from topos.native import JaxWorkload, adam

VOCABULARY = 32
CONTEXT = 32
WIDTH = 64
HEADS = 4
LAYERS = 2
DROPOUT = 0.1


def parameters(key: jax.Array) -> dict:
    """Token and position embeddings, `LAYERS` blocks, the final norm and the head."""
    keys = iter(jax.random.split(key, 4 + 4 * LAYERS))

    def normal(*shape: int) -> jax.Array:
        return jax.random.normal(next(keys), shape) * 0.02

    def layer() -> dict:
        return {
            "attention_norm": jnp.ones(WIDTH),
            "qkv": normal(WIDTH, 3 * WIDTH),
            "out": normal(WIDTH, WIDTH),
            "feed_forward_norm": jnp.ones(WIDTH),
            "up": normal(WIDTH, 4 * WIDTH),
            "down": normal(4 * WIDTH, WIDTH),
        }

    return {
        "tokens": normal(VOCABULARY, WIDTH),
        "positions": normal(CONTEXT, WIDTH),
        "layers": [layer() for _ in range(LAYERS)],
        "norm": jnp.ones(WIDTH),
        "head": normal(WIDTH, VOCABULARY),
    }


def layer_norm(hidden: jax.Array, gain: jax.Array) -> jax.Array:
    mean = hidden.mean(-1, keepdims=True)
    variance = ((hidden - mean) ** 2).mean(-1, keepdims=True)
    return (hidden - mean) / jnp.sqrt(variance + 1e-5) * gain


def dropout(key: jax.Array, hidden: jax.Array) -> jax.Array:
    keep = jax.random.bernoulli(key, 1 - DROPOUT, hidden.shape)
    return jnp.where(keep, hidden / (1 - DROPOUT), 0)


def block(layer: dict, hidden: jax.Array, key: jax.Array) -> jax.Array:
    """A pre-norm transformer layer: causal self-attention, then a feed-forward net."""
    batch, length, _ = hidden.shape
    normed = layer_norm(hidden, layer["attention_norm"])
    query, key_, value = jnp.split(normed @ layer["qkv"], 3, axis=-1)

    def heads(x: jax.Array) -> jax.Array:
        return x.reshape(batch, length, HEADS, WIDTH // HEADS).transpose(0, 2, 1, 3)

    scores = heads(query) @ heads(key_).transpose(0, 1, 3, 2) / jnp.sqrt(WIDTH // HEADS)
    causal = jnp.tril(jnp.ones((length, length), bool))
    weights = jax.nn.softmax(jnp.where(causal, scores, -1e9), axis=-1)
    attended = (weights @ heads(value)).transpose(0, 2, 1, 3).reshape(batch, length, WIDTH)
    # Named, so that the route checkpoint-names:attention keeps it and recomputes the rest.
    attended = checkpoint_name(attended @ layer["out"], "attention")
    hidden = hidden + attended
    up = jax.nn.gelu(layer_norm(hidden, layer["feed_forward_norm"]) @ layer["up"])
    return hidden + dropout(key, up @ layer["down"])


def next_token_loss(parameters, tokens, targets, key, remat=lambda block: block):
    """Mean cross-entropy of each next token; each block under `remat` (what a
    checkpointing route passes: `jax.checkpoint` under its policy), dropout drawn from
    `key` (step t's, the same in every route)."""
    hidden = parameters["tokens"][tokens] + parameters["positions"][: tokens.shape[1]]
    for layer, layer_key in zip(parameters["layers"], jax.random.split(key, LAYERS)):
        hidden = remat(block)(layer, hidden, layer_key)
    logits = layer_norm(hidden, parameters["norm"]) @ parameters["head"]
    chosen = jnp.take_along_axis(jax.nn.log_softmax(logits), targets[..., None], axis=-1)
    return -chosen.mean()


def sequences(directory: str | None):
    """512 windows of a deterministic sequence with structure to learn (each token a
    function of the two before it), and the same windows shifted by one as targets."""
    stream = [int(value) for value in np.random.default_rng(7).integers(VOCABULARY, size=2)]
    while len(stream) < 512 + CONTEXT + 1:
        stream.append((stream[-1] * 3 + stream[-2] + 1) % VOCABULARY)
    text = np.array(stream, dtype=np.int32)
    windows = np.stack([text[start : start + CONTEXT + 1] for start in range(512)])
    return windows[:, :-1], windows[:, 1:]


workload = JaxWorkload(
    name="jax-transformer",
    parameters=parameters,
    loss=next_token_loss,
    optimizer=adam(3e-3),
    data=sequences,
    batch_size=16,
)

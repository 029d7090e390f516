"""What a PyTorch user writes first records and trains: a broadcast bias add,
`x.mean(-1, keepdims=True)`, `x ** 2`, `reshape(-1)`, class-index cross-entropy, an
embedding lookup, a layer norm, a gelu MLP and causal attention, with AdamW."""

from __future__ import annotations

import numpy as np
import pytest

from topos import (
    AdamW,
    Embedding,
    Indices,
    LayerNorm,
    Linear,
    Tape,
    Tensor,
    causal_self_attention,
    cross_entropy,
    embedding,
    gelu,
    init,
)


def train_both_routes(tape, loss, feeds, steps=30, learning_rate=0.05):
    """Every named parameter trained by both routes for `steps` AdamW steps; asserts the
    routes' losses are bit-identical and returns them."""
    parameters = list(tape.named_parameters().values())
    adjoints = tape.differentiate(loss, parameters)
    network = tape.into_network()
    plans = {
        "recorded": network.entry(adjoints.roots()).lower(),
        "engine": network.entry([loss.symbol]).backward().lower(),
    }
    losses = {}
    for route, plan in plans.items():
        current = network.parameters()
        optimizer = AdamW(learning_rate, weight_decay=0.0)
        trajectory = []
        for _ in range(steps):
            run = plan.forward(current, feeds)
            if route == "recorded":
                gradients = run.recorded_gradients(adjoints)
            else:
                gradients = run.backward(loss.symbol).parameters(current)
            trajectory.append(run.of(loss.symbol).numpy().tobytes())
            current = optimizer.step(current, gradients)
        losses[route] = trajectory
    assert losses["engine"] == losses["recorded"]
    return [float(np.frombuffer(bits, np.float32)[0]) for bits in losses["recorded"]]


def test_a_token_model_written_as_in_pytorch_trains():
    rng = np.random.default_rng(0)
    vocabulary, batch, positions, features = 7, 3, 8, 16
    tape = Tape()
    tokens = tape.input(Indices.zeros([batch, positions], vocabulary))
    targets = tape.input(Indices.zeros([batch, positions], vocabulary))
    lookup = Embedding(tape, init.normal(1, 0.5)([vocabulary, features]), "embedding")
    positional = tape.parameter(init.normal(2, 0.1)([positions, features]), "positions")
    norm = LayerNorm(tape, features, "norm")
    qkv = Linear(tape, init.normal(3, 0.1)([features, 3 * features]), None, "qkv")
    projection = Linear(tape, init.normal(4, 0.1)([features, features]), None, "projection")
    hidden = Linear(tape, init.normal(5, 0.1)([features, 32]), Tensor.filled([32], 0.0), "hidden")
    bias = tape.parameter(Tensor.filled([vocabulary], 0.0), "bias")
    head = Linear(tape, init.normal(6, 0.1)([32, vocabulary]), None, "head")

    x = lookup.express(tokens) + positional  # [B, T, D] + [T, D]
    x = x - x.mean(-1, keepdims=True)  # x.mean(-1, keepdim=True) is accepted too
    x = x / ((x**2).mean(-1, keepdim=True) + 1e-5) ** 0.5
    x = x + causal_self_attention(norm.express(x), qkv, projection, heads=2)
    logits = head.express(gelu(hidden.express(x))) + bias  # a broadcast bias add
    assert logits.reshape(-1).shape == (batch * positions * vocabulary,)
    loss = cross_entropy(logits, targets)  # class indices, not one-hot rows
    ids = rng.integers(0, vocabulary, (batch, positions + 1))
    feeds = {tokens.symbol: ids[:, :-1], targets.symbol: Indices.of(ids[:, 1:], vocabulary)}
    losses = train_both_routes(tape, loss, feeds)
    assert losses[0] > 1.5 and losses[-1] < 0.5 * losses[0]


def test_an_index_out_of_range_a_float_feed_or_a_float_operand_is_refused():
    tape = Tape()
    tokens = tape.input(Indices.zeros([2], 3))
    table = tape.parameter(Tensor.filled([3, 2], 1.0))
    total = embedding(table, tokens).sum()
    with pytest.raises(TypeError, match="must be an index input"):
        tape.record("embedding", (table, table))
    # Written as torch.nn.functional.embedding(input, weight): the order is named.
    with pytest.raises(TypeError, match="the table comes first, then the index input"):
        embedding(tokens, table)
    with pytest.raises(TypeError, match="must be a float value"):
        _ = tokens + 1.0
    network = tape.into_network()
    plan = network.entry([total.symbol]).lower()
    with pytest.raises(ValueError, match=r"outside 0\.\.2"):
        plan.forward(network.parameters(), {tokens.symbol: np.array([0, 3])})
    with pytest.raises(TypeError, match="Indices or an integer array"):
        plan.forward(network.parameters(), {tokens.symbol: Tensor.filled([2], 0.0)})
    run = plan.forward(network.parameters(), {tokens.symbol: np.array([2, 1])})
    assert run.of(total.symbol).scalar() == 4.0

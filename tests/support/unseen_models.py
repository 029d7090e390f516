"""Three models written as a user writes them from the guide's vocabulary, none of them a
built-in's shape: a GRU with a layer norm on its state, an attention block with
residuals, a convnet with batch norms. Each is recorded for its recorded route (the
mean cross-entropy's gradients with respect to every parameter) and returned as the
network and the roots a remat lowering plans for (`unseen_models()`)."""

from __future__ import annotations

from collections.abc import Iterator

from topos import (
    BatchNorm2d,
    Conv2d,
    Embedding,
    Indices,
    LayerNorm,
    Linear,
    Tape,
    Tensor,
    adaptive_avg_pool2d,
    cross_entropy,
    init,
)
from topos.nn.activation import gelu
from topos.nn.attention import causal_self_attention
from topos.nn.gru import GRUCell


def _linear(tape: Tape, inputs: int, outputs: int, seed: int, name: str) -> Linear:
    weights = init.xavier(seed)([inputs, outputs])
    return Linear(tape, weights, Tensor.filled([outputs], 0.0), name)


def _recorded(tape: Tape, loss):
    adjoints = tape.differentiate(loss.symbol, list(tape.named_parameters().values()))
    network = tape.into_network()
    return network, network.entry(adjoints.roots()).roots


def gru_with_layer_norm(rows: int = 4, length: int = 6, features: int = 5, hidden: int = 8):
    """A GRU cell unrolled over `length` readings, a layer norm on its state after each,
    and a linear head on the last state."""
    tape = Tape()
    cell = GRUCell(tape, features, hidden, seed=31, name="gru")
    norm = LayerNorm(tape, hidden, name="norm")
    head = _linear(tape, hidden, 3, 32, "head")
    readings = [tape.input(Tensor.filled([rows, features], 0.5)) for _ in range(length)]
    targets = tape.input(Tensor.selection([0] * rows, 3))
    state = None
    for reading in readings:
        state = norm.express(cell.express(reading, state))
    return _recorded(tape, cross_entropy(head.express(state), targets))


def attention_block(rows: int = 2, context: int = 8, features: int = 8, heads: int = 2):
    """Token embeddings through one pre-norm attention block with residuals (attention,
    then a GELU feed-forward), a final norm and an untied head."""
    vocabulary = 6
    tape = Tape()
    embedding = Embedding(tape, init.normal(41, 0.5)([vocabulary, features]), "embedding")
    first, second = LayerNorm(tape, features, "ln1"), LayerNorm(tape, features, "ln2")
    qkv = _linear(tape, features, 3 * features, 42, "qkv")
    projection = _linear(tape, features, features, 43, "projection")
    up = _linear(tape, features, 4 * features, 44, "up")
    down = _linear(tape, 4 * features, features, 45, "down")
    final = LayerNorm(tape, features, "ln_final")
    head = _linear(tape, features, vocabulary, 46, "head")
    tokens = tape.input(Indices.zeros([rows * context], vocabulary))
    targets = tape.input(Indices.zeros([rows * context], vocabulary))
    x = embedding.express(tokens).reshape(rows, context, features)
    x = x + causal_self_attention(first.express(x), qkv, projection, heads)
    flat = second.express(x).reshape(rows * context, features)
    x = x + down.express(gelu(up.express(flat))).reshape(rows, context, features)
    logits = head.express(final.express(x).reshape(rows * context, features))
    return _recorded(tape, cross_entropy(logits, targets))


def convnet_with_batch_norm(rows: int = 4, side: int = 8, channels: int = 4):
    """Two 3x3 convolutions, each followed by a batch norm and a relu, global average
    pooling and a linear head."""
    tape = Tape()
    kernels = [init.kaiming(51)([channels, 3, 3, 3]), init.kaiming(52)([channels, channels, 3, 3])]
    convolutions = [Conv2d(tape, kernel, None, padding=1) for kernel in kernels]
    norms = [BatchNorm2d(tape, channels, name=f"bn{i}") for i in (1, 2)]
    head = _linear(tape, channels, 3, 53, "head")
    images = tape.input(Tensor.filled([rows, 3, side, side], 0.25))
    targets = tape.input(Tensor.selection([0] * rows, 3))
    x = images
    for convolution, norm in zip(convolutions, norms, strict=True):
        x = norm.express(convolution.express(x)).relu()
    pooled = adaptive_avg_pool2d(x, 1).reshape(rows, channels)
    return _recorded(tape, cross_entropy(head.express(pooled), targets))


def unseen_models() -> Iterator[tuple[str, tuple]]:
    """Each model's name, and its network and roots."""
    yield "gru with layer norm", gru_with_layer_norm()
    yield "attention block", attention_block()
    yield "convnet with batch norm", convnet_with_batch_norm()

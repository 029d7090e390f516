"""Llama: a small decoder-only transformer in the Llama style, exactly as issue 27
specifies it.

    x = tok_embeddings[tokens]                                          [B, T, D]
    for each layer:  n = rms_norm(x);  h = x + wo(attention(rotary(wq(n)), rotary(wk(n)), wv(n)))
                     m = rms_norm(h);  x = h + w2(silu(w1(m)) * w3(m))
    logits = output(rms_norm(x))                                        [B, T, V]

Attention is causal over `heads` heads of `D / heads` features, scaled by
`1 / sqrt(D / heads)`; rotary embeddings (half-split, base theta) turn q and k per head.
No biases anywhere; RMS norms with weight (1 to start) and eps 1e-6; the output head
is untied. A weight is stored `[inputs, outputs]`, as `Linear` stores it.

Parameters, in order: `tok_embeddings.weight`; per layer i `layers.{i}.attention_norm.weight`,
`layers.{i}.attention.wq.weight`, `wk`, `wv`, `wo`, `layers.{i}.ffn_norm.weight`,
`layers.{i}.feed_forward.w1.weight`, `w3`, `w2`; `norm.weight`; `output.weight`.
Every matrix draws `init.normal(seed, 0.02)` with seeds `first_seed, first_seed + 1, ...`
in the order tok_embeddings, per layer wq, wk, wv, wo, w1, w3, w2, then output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from topos.errors import ShapeError
from topos.graph.symbol import Symbol
from topos.graph.tape import Tape
from topos.graph.value import Value
from topos.nn import init
from topos.nn.attention import attention
from topos.nn.embedding import Embedding
from topos.nn.linear import Linear
from topos.nn.rms_norm import RMSNorm
from topos.nn.rotary import Rotary
from topos.tensor import Tensor

DEVIATION = 0.02


@dataclass(frozen=True)
class LlamaShape:
    """The model's sizes: vocabulary V, context T, features D, heads, layers, the
    feed-forward's hidden width, RMS norm eps and rotary base."""

    vocabulary: int
    context: int = 64
    features: int = 64
    heads: int = 4
    layers: int = 2
    hidden: int = 172
    eps: float = 1e-6
    theta: float = 10000.0


@dataclass(frozen=True)
class LlamaLayer:
    """One pre-norm layer's norms and bias-free projections."""

    attention_norm: RMSNorm
    wq: Linear
    wk: Linear
    wv: Linear
    wo: Linear
    ffn_norm: RMSNorm
    w1: Linear
    w3: Linear
    w2: Linear


class Llama:
    """The model's parameters recorded on a tape, by name (see the module)."""

    def __init__(
        self, tape: Tape, shape: LlamaShape, first_seed: int = 51, dtype: Any = np.float32
    ) -> None:
        if shape.features % shape.heads:
            raise ShapeError(f"Llama: {shape.heads} heads do not divide {shape.features}")
        self.shape = shape
        taken = set(tape.names)
        seeds = iter(range(first_seed, first_seed + 7 * shape.layers + 2))
        features, hidden = shape.features, shape.hidden

        def drawn(extents) -> Tensor:
            return init.normal(next(seeds), DEVIATION)(extents).astype(dtype)

        def linear(inputs: int, outputs: int, name: str) -> Linear:
            return Linear(tape, drawn([inputs, outputs]), None, name)

        self.tok_embeddings = Embedding(
            tape, drawn([shape.vocabulary, features]), "tok_embeddings.weight"
        )
        self.layers: list[LlamaLayer] = []
        for layer in range(shape.layers):
            prefix = f"layers.{layer}"
            # Recorded in the order of the names; drawn in the seed order
            # (wq, wk, wv, wo, w1, w3, w2), which is the same order here.
            attention_norm = RMSNorm(tape, features, f"{prefix}.attention_norm", shape.eps, dtype)
            wq = linear(features, features, f"{prefix}.attention.wq")
            wk = linear(features, features, f"{prefix}.attention.wk")
            wv = linear(features, features, f"{prefix}.attention.wv")
            wo = linear(features, features, f"{prefix}.attention.wo")
            ffn_norm = RMSNorm(tape, features, f"{prefix}.ffn_norm", shape.eps, dtype)
            w1 = linear(features, hidden, f"{prefix}.feed_forward.w1")
            w3 = linear(features, hidden, f"{prefix}.feed_forward.w3")
            w2 = linear(hidden, features, f"{prefix}.feed_forward.w2")
            self.layers.append(LlamaLayer(attention_norm, wq, wk, wv, wo, ffn_norm, w1, w3, w2))
        self.norm = RMSNorm(tape, features, "norm", shape.eps, dtype)
        self.output = linear(features, shape.vocabulary, "output")
        self.rotary = Rotary(tape, shape.context, features // shape.heads, shape.theta, dtype)
        self._parameters = {
            name: Symbol(tape.origin, index)
            for name, index in tape.names.items()
            if name not in taken
        }

    def express(self, tokens: Value) -> Value:
        """Records the logits `[B, T, V]` of `tokens` (an index input `[B, T]`)."""
        batch, positions = tokens.shape
        shape = self.shape
        if positions != shape.context:
            raise ShapeError(
                f"Llama: {positions} positions; the model's context is {shape.context}"
            )
        features, heads = shape.features, shape.heads
        width = features // heads
        rows = batch * positions

        def split(block: Value) -> Value:
            # [B*T, D] to the heads' [B, heads, T, width] (a view)
            return block.reshape(batch, positions, heads, width).permute(0, 2, 1, 3)

        x = self.tok_embeddings.express(tokens)
        for layer in self.layers:
            normalised = layer.attention_norm.express(x).reshape(rows, features)
            queries = self.rotary.express(split(layer.wq.express(normalised)))
            keys = self.rotary.express(split(layer.wk.express(normalised)))
            values = split(layer.wv.express(normalised))
            mixed = attention(queries, keys, values, causal=True, scale=1.0 / width**0.5)
            merged = mixed.permute(0, 2, 1, 3).reshape(rows, features)
            x = x + layer.wo.express(merged).reshape(batch, positions, features)
            normalised = layer.ffn_norm.express(x).reshape(rows, features)
            gated = layer.w1.express(normalised).silu() * layer.w3.express(normalised)
            x = x + layer.w2.express(gated).reshape(batch, positions, features)
        normalised = self.norm.express(x).reshape(rows, features)
        return self.output.express(normalised).reshape(batch, positions, shape.vocabulary)

    def named_parameters(self) -> dict[str, Symbol]:
        """Every parameter by name, in the order listed in the module."""
        return dict(self._parameters)

"""GPT: a small decoder-only transformer over characters, exactly as issue 14 specifies it.

    x = token_embedding[tokens] + position_embedding          [B, T, D]
    for each block i:  x = x + attention(ln1(x)); x = x + mlp(ln2(x))
    logits = head(ln_f(x))                                    [B, T, V]

Pre-norm blocks `blocks.{i}`: `attention` is a fused `qkv` (D to 3D, bias; columns q,
then k, then v, each `heads` heads in order), a causal softmax of `q kᵀ / sqrt(D /
heads)`, and `projection` (D to D, bias); `mlp` is `expand` (D to 4D, bias), gelu (tanh)
and `project` (4D to D, bias). Layer norms have weight and bias, eps 1e-5; `head` (D to
V) has no bias. A weight is stored `[inputs, outputs]`.

Initialisation: every Linear weight and both embeddings draw `init.normal(seed, 0.02)`
with seeds `first_seed, first_seed + 1, ...` in the order the parameters are listed
(token embedding, position embedding, then per block qkv, projection, expand, project,
then head); biases 0, layer-norm weights 1. In float64 the very same float32 draws are
widened (`topos check`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from topos.errors import ShapeError
from topos.graph import Symbol, Tape, Value
from topos.nn import Embedding, LayerNorm, Linear, causal_self_attention, init
from topos.tensor import Tensor

DEVIATION = 0.02


@dataclass(frozen=True)
class GPTShape:
    """The model's sizes: vocabulary V, context T, features D, heads, blocks, MLP width."""

    vocabulary: int
    context: int = 64
    features: int = 64
    heads: int = 4
    blocks: int = 2
    expansion: int = 4


class GPT:
    """The model's parameters recorded on a tape, by name (see the module)."""

    def __init__(
        self, tape: Tape, shape: GPTShape, first_seed: int = 31, dtype: Any = np.float32
    ) -> None:
        self.shape = shape
        taken = set(tape.names)
        seeds = iter(range(first_seed, first_seed + 4 * shape.blocks + 3))
        features = shape.features

        def drawn(extents) -> Tensor:
            return init.normal(next(seeds), DEVIATION)(extents).astype(dtype)

        def zeros(extent: int) -> Tensor:
            return Tensor.filled([extent], 0.0, dtype=dtype)

        self.token_embedding = Embedding(
            tape, drawn([shape.vocabulary, features]), "token_embedding"
        )
        self.position_embedding = tape.parameter(
            drawn([shape.context, features]), "position_embedding"
        )
        self.blocks = []
        for block in range(shape.blocks):
            prefix = f"blocks.{block}"
            ln1 = LayerNorm(tape, features, f"{prefix}.ln1", dtype=dtype)
            qkv = Linear(
                tape,
                drawn([features, 3 * features]),
                zeros(3 * features),
                f"{prefix}.attention.qkv",
            )
            projection = Linear(
                tape, drawn([features, features]), zeros(features), f"{prefix}.attention.projection"
            )
            ln2 = LayerNorm(tape, features, f"{prefix}.ln2", dtype=dtype)
            width = shape.expansion * features
            expand = Linear(tape, drawn([features, width]), zeros(width), f"{prefix}.mlp.expand")
            project = Linear(
                tape, drawn([width, features]), zeros(features), f"{prefix}.mlp.project"
            )
            self.blocks.append((ln1, qkv, projection, ln2, expand, project))
        self.ln_f = LayerNorm(tape, features, "ln_f", dtype=dtype)
        self.head = Linear(tape, drawn([features, shape.vocabulary]), None, "head")
        self._parameters = {
            name: Symbol(tape.origin, index)
            for name, index in tape.names.items()
            if name not in taken
        }

    def express(self, tokens: Value) -> Value:
        """Records the logits `[B, T, V]` of `tokens` (an index input `[B, T]`)."""
        batch, positions = tokens.shape
        features = self.shape.features
        x = self.token_embedding.express(tokens)
        if positions != self.shape.context:
            raise ShapeError(
                f"GPT: {positions} positions; the model's context is {self.shape.context}"
            )
        x = x + self.position_embedding
        rows = batch * positions
        for ln1, qkv, projection, ln2, expand, project in self.blocks:
            attended = causal_self_attention(ln1.express(x), qkv, projection, self.shape.heads)
            x = x + attended
            hidden = expand.express(ln2.express(x).reshape(rows, features))
            # project(gelu(hidden)) as one node that never holds gelu(hidden).
            x = x + project.express_gelu(hidden).reshape(batch, positions, features)
        normalised = self.ln_f.express(x).reshape(rows, features)
        return self.head.express(normalised).reshape(batch, positions, self.shape.vocabulary)

    def named_parameters(self) -> dict[str, Symbol]:
        """Every parameter by name, in the order listed in the module."""
        return dict(self._parameters)

"""causal_self_attention and CausalSelfAttention: multi-head scaled dot-product attention
in which each position sees itself and the positions before it."""

from __future__ import annotations

import math

from topos.errors import ShapeError
from topos.graph.symbol import Symbol
from topos.graph.value import Value
from topos.nn.linear import Linear
from topos.nn.loss import softmax
from topos.nn.module import Module


def causal_self_attention(value: Value, qkv: Linear, projection: Linear, heads: int) -> Value:
    """`projection(concat_h(softmax_causal(q_h k_hᵀ / sqrt(d)) v_h))` over `value [B, T, D]`.

    `qkv` maps D to 3D: its columns are q, then k, then v, each split into `heads` heads
    of `d = D / heads` columns in order. q, k and v are three products with the matching
    column blocks of `qkv`'s parameters (the same values as slicing one product, without
    its gradient's three zero-padded copies); q is scaled before the scores (by 1/4 for
    d = 16, a power of two, so the scores are those of scaling after, bit for bit).
    """
    if value.shape.rank != 3:
        raise ShapeError(f"causal_self_attention: input {value.shape} must be [B, T, D]")
    batch, positions, features = value.shape
    if heads < 1 or features % heads:
        raise ShapeError(f"causal_self_attention: {heads} heads do not divide {features} features")
    width = features // heads
    rows = value.reshape(batch * positions, features)

    def split(block: Value) -> Value:
        return block.reshape(batch, positions, heads, width).permute(0, 2, 1, 3)

    queries = qkv.express_columns(rows, 0, features) * (1.0 / math.sqrt(width))
    keys = qkv.express_columns(rows, features, features)
    values = qkv.express_columns(rows, 2 * features, features)
    tape = value.tape
    scores = tape.record("matmul_nt", (split(queries), split(keys)))
    weights = softmax(scores, causal=True)
    mixed = weights @ split(values)
    merged = mixed.permute(0, 2, 1, 3).reshape(batch * positions, features)
    return projection.express(merged).reshape(batch, positions, features)


class CausalSelfAttention(Module):
    """A fused `qkv` layer (D to 3D), `heads` heads and an output `projection` (D to D);
    named `<name>.qkv` and `<name>.projection` when the layers are."""

    def __init__(self, qkv: Linear, projection: Linear, heads: int) -> None:
        self.qkv = qkv
        self.projection = projection
        self.heads = heads

    def express(self, value: Value) -> Value:
        """Records the attention over `value [B, T, D]`."""
        return causal_self_attention(value, self.qkv, self.projection, self.heads)

    def parameters(self) -> list[Symbol]:
        """qkv's weight and bias, then the projection's."""
        return self.qkv.parameters() + self.projection.parameters()

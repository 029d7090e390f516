"""attention, causal_self_attention and CausalSelfAttention: scaled dot-product attention
over q, k and v of one's own (`torch.nn.functional.scaled_dot_product_attention`), and
the multi-head self-attention layer of the built-in `gpt`, in which each position sees
itself and the positions before it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from topos.errors import ShapeError
from topos.graph.symbol import Symbol
from topos.graph.value import Value
from topos.nn.linear import Linear
from topos.nn.loss import softmax
from topos.nn.module import Module
from topos.tensor import Tensor


def attention(
    queries: Value,
    keys: Value,
    values: Value,
    causal: bool = False,
    mask: Value | Any = None,
    scale: float | None = None,
) -> Value:
    """`softmax(q kᵀ scale + mask) v` over the last two axes (PyTorch's
    `scaled_dot_product_attention`): q `[..., Tq, d]`, k `[..., Tk, d]`, v `[..., Tk, dv]`,
    the leading axes batched (`[B, heads, T, d]`), giving `[..., Tq, dv]`.

    `causal` leaves out position j for query i when j > i (square scores). `mask` is
    added to the scores before the softmax (a Value, or an array or Tensor recorded as a
    constant; -inf leaves a position out). `scale` defaults to `1 / sqrt(d)`; q is
    scaled before the product, which is the very same scores when the scale is a power
    of two (d = 16, 64, ...). Grouped-query attention: k and v with fewer heads (axis
    -3) than q, a divisor of them, serve `heads / kv_heads` consecutive query heads each
    (as `repeat_interleave` would repeat them), by a `gather` whose gradient adds back.
    """
    if queries.shape.rank < 2 or keys.shape.rank != queries.shape.rank:
        raise ShapeError(
            f"attention: queries {queries.shape} and keys {keys.shape} must both be [..., T, d]"
        )
    width = queries.shape[-1]
    if queries.shape.rank >= 3 and keys.shape[-3] != queries.shape[-3]:
        heads, groups = queries.shape[-3], keys.shape[-3]
        if groups < 1 or heads % groups:
            raise ShapeError(
                f"attention: {groups} key/value heads do not divide {heads} query heads"
            )
        picks = tuple(head // (heads // groups) for head in range(heads))
        axis = queries.shape.rank - 3
        keys = keys.gather(axis, picks)
        values = values.gather(axis, picks)
    scale = 1.0 / math.sqrt(width) if scale is None else float(scale)
    if scale != 1.0:
        queries = queries * scale
    scores = queries.tape.record("matmul_nt", (queries, keys))
    if mask is not None:
        if not isinstance(mask, Value):
            payload = mask.numpy() if isinstance(mask, Tensor) else np.asarray(mask)
            tape = queries.tape
            mask = tape.leaf(Tensor(payload.shape, payload, dtype=tape.dtype))
        scores = scores + mask
    weights = softmax(scores, causal=causal)
    return weights @ values


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

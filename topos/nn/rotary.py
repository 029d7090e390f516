"""rotary, rotary_tables and Rotary: rotary position embeddings (RoPE) in the half-split
convention of Llama and Hugging Face's `rotate_half`.

Feature pair `(i, i + d/2)` of position t turns by the angle `t theta^(-2i/d)`:

    y = x * cos + rotate_half(x) * sin,   rotate_half(x) = cat(-x[..., d/2:], x[..., :d/2])

with `cos` and `sin` the angles' tables repeated over both halves. One fused `rotary`
node (topos.ops.primitives.rotary) over the half tables, recorded as constants.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topos.errors import ShapeError
from topos.graph.tape import Tape
from topos.graph.value import Value
from topos.tensor import Tensor

#: Llama's base.
THETA = 10000.0


def rotary_tables(
    positions: int, width: int, theta: float = THETA, dtype: Any = np.float32
) -> tuple[Tensor, Tensor]:
    """The cosines and sines `[positions, width / 2]` of the angles `t theta^(-2i/width)`,
    computed in float64 and rounded once to `dtype`."""
    if width % 2:
        raise ShapeError(f"rotary: width {width} is odd; pairs need an even width")
    frequencies = float(theta) ** (-np.arange(0, width, 2, dtype=np.float64) / width)
    angles = np.outer(np.arange(positions, dtype=np.float64), frequencies)
    return (
        Tensor.adopt(np.cos(angles).astype(dtype)),
        Tensor.adopt(np.sin(angles).astype(dtype)),
    )


class Rotary:
    """Rotary embeddings for `[..., positions, width]` values, their tables recorded once
    on `tape` and shared by every value it turns (q and k of every layer)."""

    def __init__(
        self, tape: Tape, positions: int, width: int, theta: float = THETA, dtype: Any = None
    ) -> None:
        cos, sin = rotary_tables(positions, width, theta, tape.dtype if dtype is None else dtype)
        self.positions = positions
        self.width = width
        self.cos = tape.leaf(cos)
        self.sin = tape.leaf(sin)

    def express(self, value: Value) -> Value:
        """Records `value [..., positions, width]` turned by its positions' angles."""
        expected = (self.positions, self.width)
        if value.shape.rank < 2 or tuple(value.shape)[-2:] != expected:
            positions, width = expected
            raise ShapeError(f"rotary: value {value.shape} must be [..., {positions}, {width}]")
        return value.tape.record("rotary", (value, self.cos, self.sin), inverse=False)


def rotary(value: Value, theta: float = THETA) -> Value:
    """`value [..., T, d]` with rotary embeddings of base `theta` applied along its last
    axis, position t at axis -2 (per head: `[B, heads, T, d]`). Records its tables each
    call; `Rotary` records them once for many values."""
    if value.shape.rank < 2:
        raise ShapeError(f"rotary: value {value.shape} must be [..., positions, width]")
    positions, width = tuple(value.shape)[-2:]
    return Rotary(value.tape, positions, width, theta).express(value)

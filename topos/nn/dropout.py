"""dropout and dropout_mask: zeroing a random fraction of the elements, seeded so every
route (and every run) drops the same ones.

The mask is drawn from splitmix64 at `seed` (the initialisers' generator, bit-stable
forever), never from NumPy's generators, and recorded as a constant: the kernels stay
pure, so the routes remain bit-identical. Recorded so, it is the same mask every
step. For a fresh mask per step, record `value * tape.input(dropout_mask(...))` and
feed `dropout_mask(shape, p, seed + step)` with each batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from topos.graph.value import Value
from topos.splitmix64 import SplitMix64
from topos.tensor import Tensor


def dropout_mask(shape: Sequence[int], p: float, seed: int, dtype: Any = np.float32) -> Tensor:
    """`1 / (1 - p)` where a unit draw of splitmix64(`seed`) is at least `p`, else 0, in
    row-major order (PyTorch's inverted dropout: the kept elements are scaled up so the
    expected value is unchanged)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout: p must lie in [0, 1), not {p}")
    count = int(np.prod(shape, dtype=np.int64))
    kept = SplitMix64(seed).units(count) >= p
    mask = np.where(kept, 1.0 / (1.0 - p), 0.0).reshape(tuple(shape))
    return Tensor.adopt(mask.astype(dtype))


def dropout(value: Value, p: float, seed: int) -> Value:
    """`value` times a seeded mask (see `dropout_mask`; the same mask every step). With
    `p` 0, `value` itself: nothing is recorded."""
    if p == 0.0:
        return value
    mask = dropout_mask(tuple(value.shape), p, seed, value.tape.dtype)
    return value * value.tape.leaf(mask)

"""shuffle: the batch order, a Fisher-Yates shuffle over the splitmix64 stream."""

from __future__ import annotations

from collections.abc import MutableSequence

import numpy as np

from topos.splitmix64 import SplitMix64


def shuffle(order: np.ndarray | MutableSequence[int], state: int) -> int:
    """Shuffles `order` in place and returns the generator state after it.

    For i from n-1 down to 1: swap(i, next % (i + 1)), each `next` a splitmix64
    draw from `state`; exactly the Rust crate's order. The swaps are sequential by
    nature, but the n - 1 draws and their remainders are computed in one block.
    """
    generator = SplitMix64(state)
    count = len(order)
    if count < 2:
        return generator.state
    positions = np.arange(count - 1, 0, -1, dtype=np.uint64)
    partners = (generator.draws(count - 1) % (positions + np.uint64(1))).tolist()
    # Swapping inside a Python list is several times faster than indexing NumPy
    # scalars one at a time.
    items = order.tolist() if isinstance(order, np.ndarray) else order
    for position, partner in zip(range(count - 1, 0, -1), partners):
        items[position], items[partner] = items[partner], items[position]
    if isinstance(order, np.ndarray):
        order[:] = items
    return generator.state

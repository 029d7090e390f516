"""max_pool: the largest value of each window, ties going to the earliest lane."""

from __future__ import annotations

from topos.errors import ShapeError
from topos.graph.value import Value


def max_pool(value: Value, size: int, stride: int) -> Value:
    """Pools `[N, C, H, W]` over `size x size` windows at `stride`.

    One `max_pool` node: a left-biased `maximum` folded over the window lanes in
    row-major order, so on a tie the gradient goes to the earliest lane, as in
    PyTorch. Its derivative, `max_pool_route`, places each window's gradient on
    the lane that won it (boolean masks from comparisons; no argmax).
    """
    if value.shape.rank != 4:
        raise ShapeError(f"max_pool: input {value.shape} must be [N, C, H, W]")
    if size < 1 or stride < 1:
        raise ValueError(f"max_pool: size {size} and stride {stride} must be positive")
    return value.tape.record("max_pool", (value,), size=int(size), stride=int(stride))

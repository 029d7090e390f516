"""max_pool: the largest value of each window, ties going to the earliest lane."""

from __future__ import annotations

from topos.errors import ShapeError
from topos.graph.value import Value


def max_pool(value: Value, size: int, stride: int) -> Value:
    """Pools `[N, C, H, W]` over `size x size` windows at `stride`.

    A composite: the windows are unfolded, then a left-biased `maximum` folds the
    lanes in order, so on a tie the gradient goes to the earliest lane, as in PyTorch.
    """
    if value.shape.rank != 4:
        raise ShapeError(f"max_pool: input {value.shape} must be [N, C, H, W]")
    if size < 1 or stride < 1:
        raise ValueError(f"max_pool: size {size} and stride {stride} must be positive")
    windows = value.unfold(2, size, stride).unfold(3, size, stride)
    batch, channels, out_height, out_width, _, _ = windows.shape
    lanes = windows.reshape(batch, channels, out_height, out_width, size * size)
    largest = lanes.narrow(4, 0, 1)
    for lane in range(1, size * size):
        largest = largest.maximum(lanes.narrow(4, lane, 1))
    return largest.reshape(batch, channels, out_height, out_width)

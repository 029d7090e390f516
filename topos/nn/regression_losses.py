"""mse_loss and l1_loss: PyTorch's regression losses, with its `reduction=` argument."""

from __future__ import annotations

from topos.graph.value import Value
from topos.nn.reduction import check_same_shape, reduce


def mse_loss(input: Value, target: Value, reduction: str = "mean") -> Value:
    """`(input - target) ** 2` per element, averaged (or summed, or left per element):
    `torch.nn.functional.mse_loss`."""
    check_same_shape("mse_loss", input, target)
    difference = input - target
    return reduce("mse_loss", difference * difference, reduction)


def l1_loss(input: Value, target: Value, reduction: str = "mean") -> Value:
    """`|input - target|` per element, averaged (or summed, or left per element):
    `torch.nn.functional.l1_loss`; its gradient at a zero difference is 0, as PyTorch's."""
    check_same_shape("l1_loss", input, target)
    return reduce("l1_loss", (input - target).abs(), reduction)

"""binary_cross_entropy_with_logits: the logistic loss of each logit, stable for every
finite logit."""

from __future__ import annotations

from topos.graph.value import Value
from topos.nn.reduction import check_same_shape, reduce


def binary_cross_entropy_with_logits(input: Value, target: Value, reduction: str = "mean") -> Value:
    """`-(target * log(sigmoid(input)) + (1 - target) * log(1 - sigmoid(input)))` per
    element (`torch.nn.functional.binary_cross_entropy_with_logits`), written as
    `relu(x) - x * target + ln(1 + exp(-|x|))` so no exponential can overflow. `target`
    holds probabilities in [0, 1] (labels 0 and 1, or soft ones)."""
    check_same_shape("binary_cross_entropy_with_logits", input, target)
    softplus_of_negative_magnitude = ((-input.abs()).exp() + 1.0).ln()
    elements = input.relu() - input * target + softplus_of_negative_magnitude
    return reduce("binary_cross_entropy_with_logits", elements, reduction)

"""Losses and normalisers: cross_entropy, softmax, log_softmax."""

from __future__ import annotations

from topos.errors import ShapeError
from topos.graph.value import Value


def log_softmax(logits: Value, axis: int = -1) -> Value:
    """`logits - logsumexp(logits)` along `axis`: stable for every finite logit."""
    rank = logits.shape.rank
    if -rank <= axis < 0:
        axis += rank
    # logsumexp refuses an axis outside the shape before anything reads its extent.
    normaliser = logits.logsumexp(axis)
    normaliser = normaliser.broadcast_along(axis, logits.shape[axis])
    return logits - normaliser


def softmax(logits: Value, axis: int = -1) -> Value:
    """Probabilities along `axis`: `exp(log_softmax(logits))`."""
    return log_softmax(logits, axis).exp()


def cross_entropy(logits: Value, targets: Value) -> Value:
    """The mean over the batch of the negative log-likelihood of one-hot `targets`
    under `logits [rows, classes]`, through logsumexp so no logit can overflow."""
    if logits.shape.rank != 2 or logits.shape != targets.shape:
        raise ShapeError(
            f"cross_entropy: logits {logits.shape} and targets {targets.shape} must both be "
            f"[rows, classes]"
        )
    if logits.shape[0] == 0:
        raise ShapeError(f"cross_entropy: logits {logits.shape} hold no rows to average over")
    picked = (logits * targets).sum_along(1)
    return (logits.logsumexp(1) - picked).mean()

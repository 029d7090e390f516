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


def softmax(logits: Value, axis: int = -1, causal: bool = False) -> Value:
    """Probabilities along `axis`: one fused `softmax` node along the last axis (with
    `causal`, scores `[..., T, T]` whose entry `[i, j]` for `j > i` is left out), else
    `exp(log_softmax(logits))`."""
    rank = logits.shape.rank
    if -rank <= axis < 0:
        axis += rank
    if axis == rank - 1:
        return logits.tape.record("softmax", (logits,), causal=bool(causal))
    if causal:
        raise ShapeError(f"softmax: a causal softmax runs along the last axis, not axis {axis}")
    return log_softmax(logits, axis).exp()


def cross_entropy(logits: Value, targets: Value) -> Value:
    """The mean over the rows of the negative log-likelihood of the targets under
    `logits [rows, classes]`, through logsumexp so no logit can overflow.

    `targets` are one-hot rows `[rows, classes]`, or an index input of class indices
    `[rows]` (`logits [..., classes]` with indices `[...]` count every position as a row).
    """
    if targets.tape.holds_indices(targets):
        return _class_index_cross_entropy(logits, targets)
    if logits.shape.rank != 2 or logits.shape != targets.shape:
        raise ShapeError(
            f"cross_entropy: logits {logits.shape} and targets {targets.shape} must both be "
            f"[rows, classes]"
        )
    if logits.shape[0] == 0:
        raise ShapeError(f"cross_entropy: logits {logits.shape} hold no rows to average over")
    picked = (logits * targets).sum_along(1)
    return (logits.logsumexp(1) - picked).mean()


def _class_index_cross_entropy(logits: Value, targets: Value) -> Value:
    """The class-index form: `logsumexp(logits) - logits[row, target]`, averaged."""
    classes = logits.shape[-1] if logits.shape.rank else 0
    if logits.shape.rank < 2 or tuple(logits.shape)[:-1] != tuple(targets.shape):
        raise ShapeError(
            f"cross_entropy: logits {logits.shape} must be [rows, classes] over class indices "
            f"of shape [rows], not {targets.shape}"
        )
    bound = targets.tape.nodes[targets.index].attributes["classes"]
    if bound > classes:
        raise ShapeError(
            f"cross_entropy: class indices below {bound} for logits of {classes} classes"
        )
    if targets.shape.volume == 0:
        raise ShapeError(f"cross_entropy: logits {logits.shape} hold no rows to average over")
    picked = logits.tape.record("pick_class", (logits, targets))
    return (logits.logsumexp(-1) - picked).mean()

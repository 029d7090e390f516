"""The classification losses and their normalisers: cross_entropy, nll_loss, softmax,
log_softmax."""

from __future__ import annotations

from topos.errors import ShapeError
from topos.graph.value import Value
from topos.nn.reduction import check_reduction, reduce


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


def cross_entropy(
    logits: Value, targets: Value, label_smoothing: float = 0.0, reduction: str = "mean"
) -> Value:
    """The mean over the rows of the negative log-likelihood of the targets under
    `logits [rows, classes]`, through logsumexp so no logit can overflow
    (`torch.nn.functional.cross_entropy`, classes on the last axis).

    `targets` are one-hot rows `[rows, classes]` (or rows of probabilities), or an index
    input of class indices `[rows]` (`logits [..., classes]` with indices `[...]` count
    every position as a row). With `label_smoothing` ε the target is mixed with the
    uniform distribution as PyTorch mixes it: `(1 - ε) * nll + ε * mean over classes of
    -log_softmax`. `reduction` is PyTorch's: "mean", "sum" or "none" (one loss a row).
    """
    check_reduction("cross_entropy", reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing {label_smoothing} must lie in [0, 1]")
    if targets.tape.holds_indices(targets):
        normaliser, picked = _class_index_terms("cross_entropy", logits, targets)
    else:
        normaliser, picked = _one_hot_terms("cross_entropy", logits, targets)
    if label_smoothing == 0.0:
        # The form every existing workload trains on, kept node for node.
        return reduce("cross_entropy", normaliser - picked, reduction)
    smoothing = float(label_smoothing)
    uniform = logits.sum_along(logits.shape.rank - 1) / float(logits.shape[-1])
    rows = normaliser - picked * (1.0 - smoothing) - uniform * smoothing
    return reduce("cross_entropy", rows, reduction)


def nll_loss(log_probabilities: Value, targets: Value, reduction: str = "mean") -> Value:
    """The negative log-likelihood of the targets under `log_probabilities [rows,
    classes]` (what `log_softmax` gives), averaged over the rows:
    `torch.nn.functional.nll_loss` with the classes on the last axis. `targets` are class
    indices (an index input `[rows]`, or `[...]` for `[..., classes]`) or one-hot rows."""
    check_reduction("nll_loss", reduction)
    if targets.tape.holds_indices(targets):
        _, picked = _class_index_terms("nll_loss", log_probabilities, targets, normaliser=False)
    else:
        _, picked = _one_hot_terms("nll_loss", log_probabilities, targets, normaliser=False)
    return reduce("nll_loss", -picked, reduction)


def _one_hot_terms(
    loss: str, logits: Value, targets: Value, normaliser: bool = True
) -> tuple[Value | None, Value]:
    """Each row's logsumexp (when `normaliser`) and its logits weighted by its target row."""
    if logits.shape.rank != 2 or logits.shape != targets.shape:
        raise ShapeError(
            f"{loss}: logits {logits.shape} and targets {targets.shape} must both be "
            f"[rows, classes]"
        )
    if logits.shape[0] == 0:
        raise ShapeError(f"{loss}: logits {logits.shape} hold no rows to average over")
    picked = (logits * targets).sum_along(1)
    return (logits.logsumexp(1) if normaliser else None), picked


def _class_index_terms(
    loss: str, logits: Value, targets: Value, normaliser: bool = True
) -> tuple[Value | None, Value]:
    """The class-index form: each row's logsumexp (when `normaliser`) and
    `logits[row, target]`."""
    classes = logits.shape[-1] if logits.shape.rank else 0
    if logits.shape.rank < 2 or tuple(logits.shape)[:-1] != tuple(targets.shape):
        raise ShapeError(
            f"{loss}: logits {logits.shape} must be [rows, classes] over class indices "
            f"of shape [rows], not {targets.shape}"
        )
    bound = targets.tape.nodes[targets.index].attributes["classes"]
    if bound > classes:
        raise ShapeError(f"{loss}: class indices below {bound} for logits of {classes} classes")
    if targets.shape.volume == 0:
        raise ShapeError(f"{loss}: logits {logits.shape} hold no rows to average over")
    picked = logits.tape.record("pick_class", (logits, targets))
    return (logits.logsumexp(-1) if normaliser else None), picked

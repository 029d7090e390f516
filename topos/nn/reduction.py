"""reduce: PyTorch's `reduction=` argument of a loss ('mean', 'sum' or 'none')."""

from __future__ import annotations

from topos.errors import ShapeError
from topos.graph.value import Value

#: The reductions a loss accepts, PyTorch's.
REDUCTIONS = ("mean", "sum", "none")


def check_reduction(loss: str, reduction: str) -> None:
    """Refuses a reduction PyTorch does not name, naming the loss and the choices."""
    if reduction not in REDUCTIONS:
        raise ValueError(
            f"{loss}: reduction {reduction!r} is not one of {', '.join(map(repr, REDUCTIONS))}"
        )


def reduce(loss: str, elements: Value, reduction: str) -> Value:
    """`elements` (one loss per element) averaged, summed or left as they are."""
    check_reduction(loss, reduction)
    if reduction == "none":
        return elements
    if elements.shape.volume == 0:
        raise ShapeError(f"{loss}: shape {elements.shape} holds no elements to reduce")
    return elements.mean() if reduction == "mean" else elements.sum()


def check_same_shape(loss: str, prediction: Value, target: Value) -> None:
    """Refuses a target whose shape is not the prediction's (PyTorch would broadcast
    with a warning; a silent broadcast of a loss is almost always a bug)."""
    if not isinstance(target, Value):
        raise TypeError(
            f"{loss}: the target must be a recorded value (tape.input(...)), not "
            f"{type(target).__name__}"
        )
    if prediction.shape != target.shape:
        raise ShapeError(
            f"{loss}: input {prediction.shape} and target {target.shape} must have one shape"
        )

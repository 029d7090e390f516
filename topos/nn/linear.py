"""Linear: an affine layer, `x @ weights + bias`, with weights `[inputs, outputs]` (and
no bias at all when it is None)."""

from __future__ import annotations

from topos.errors import ShapeError
from topos.graph.tape import Tape
from topos.graph.value import Value
from topos.nn.weighted_layer import WeightedLayer
from topos.tensor import Tensor


class Linear(WeightedLayer):
    """Scores `[rows, inputs]` into `[rows, outputs]`."""

    def __init__(self, tape: Tape, weights: Tensor, bias: Tensor | None = None) -> None:
        if weights.shape.rank != 2 or (bias is not None and bias.shape != (weights.shape[1],)):
            described = "no bias" if bias is None else f"bias {bias.shape}"
            raise ShapeError(
                f"Linear: weights {weights.shape} and {described} must be "
                f"[inputs, outputs] and [outputs]"
            )
        super().__init__(tape, weights, bias)

    def express(self, value: Value) -> Value:
        """Records `value @ weights + bias` (or `value @ weights` without a bias)."""
        if value.shape.rank != 2:
            raise ShapeError(f"Linear: input {value.shape} must be [rows, inputs]")
        product = value @ self._weights
        if self._bias is None:
            return product
        return product + self._bias.broadcast_along(0, value.shape[0])

"""Linear: an affine layer, `x @ weights + bias`, with weights `[inputs, outputs]` (and
no bias at all when it is None)."""

from __future__ import annotations

from topos.errors import ShapeError
from topos.graph.tape import Tape
from topos.graph.value import Value
from topos.nn.weighted_layer import WeightedLayer
from topos.tensor import Tensor


class Linear(WeightedLayer):
    """Scores `[rows, inputs]` (or `[..., inputs]`) into `[rows, outputs]`; named, its
    parameters are `<name>.weight` and `<name>.bias`."""

    def __init__(
        self, tape: Tape, weights: Tensor, bias: Tensor | None = None, name: str | None = None
    ) -> None:
        if weights.shape.rank != 2 or (bias is not None and bias.shape != (weights.shape[1],)):
            described = "no bias" if bias is None else f"bias {bias.shape}"
            raise ShapeError(
                f"Linear: weights {weights.shape} and {described} must be "
                f"[inputs, outputs] and [outputs]"
            )
        super().__init__(tape, weights, bias, name)

    def express(self, value: Value) -> Value:
        """Records `value @ weights + bias` (or `value @ weights` without a bias); an
        input of rank above 2 is multiplied as the rows its leading axes make."""
        if value.shape.rank < 2:
            raise ShapeError(f"Linear: input {value.shape} must be [rows, inputs]")
        if value.shape.rank > 2:
            leading = tuple(value.shape)[:-1]
            rows = self.express(value.reshape(-1, value.shape[-1]))
            return rows.reshape(*leading, self._weights.shape[1])
        product = value @ self._weights
        if self._bias is None:
            return product
        return product + self._bias_down(value.shape[0])

    def express_columns(self, value: Value, start: int, length: int) -> Value:
        """Records `value @ weights[:, start:start+length] + bias[start:start+length]`:
        one block of the layer's outputs (attention's q, k or v of one fused qkv layer),
        whose gradient reaches only that block of the parameters."""
        inputs = self._weights.shape[0]
        if value.shape.rank != 2 or value.shape[1] != inputs:
            raise ShapeError(f"Linear: input {value.shape} must be [rows, {inputs}]")
        weights = self._weights.narrow(1, start, length)
        product = value @ weights
        if self._bias is None:
            return product
        return product + self._bias.narrow(0, start, length).broadcast_along(0, value.shape[0])

    def express_gelu(self, value: Value) -> Value:
        """Records `gelu(value) @ weights + bias` as one `gelu_product` node, which never
        holds `gelu(value)` (a transformer MLP's second layer: see
        topos.ops.primitives.gelu_product)."""
        if value.shape.rank != 2:
            raise ShapeError(f"Linear: input {value.shape} must be [rows, inputs]")
        product = value.tape.record("gelu_product", (value, self._weights))
        if self._bias is None:
            return product
        return product + self._bias_down(value.shape[0])

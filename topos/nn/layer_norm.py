"""layer_norm and LayerNorm: rows standardised along the last axis, then scaled and shifted."""

from __future__ import annotations

from typing import Any

import numpy as np

from topos.errors import ShapeError
from topos.graph.symbol import Symbol
from topos.graph.tape import Tape
from topos.graph.value import Value
from topos.nn.module import Module
from topos.tensor import Tensor

#: PyTorch's default.
EPS = 1e-5


def layer_norm(value: Value, weight: Value, bias: Value, eps: float = EPS) -> Value:
    """`standardize(value, row_scale(value)) * weight + bias` over the last axis
    (`weight`, `bias`: `[D]`, broadcast over the rows): PyTorch's `layer_norm` with the
    biased variance. Its backward pass reads the standardised rows and the scales, not
    `value`, which a forward plan frees at once."""
    features = value.shape[-1] if value.shape.rank else 0
    if weight.shape != (features,) or bias.shape != (features,):
        raise ShapeError(
            f"layer_norm: weight {weight.shape} and bias {bias.shape} must be [{features}] "
            f"for input {value.shape}"
        )
    scale = value.tape.record("row_scale", (value,), eps=float(eps))
    standardised = value.tape.record("standardize", (value, scale))
    return standardised * weight + bias


class LayerNorm(Module):
    """A layer norm over `features`: weight 1 and bias 0 to start (named `<name>.weight`,
    `<name>.bias`)."""

    def __init__(
        self,
        tape: Tape,
        features: int,
        name: str | None = None,
        eps: float = EPS,
        dtype: Any = np.float32,
    ) -> None:
        self.name = name
        self.eps = eps
        self._weight = tape.parameter(
            Tensor.filled([features], 1.0, dtype=dtype), None if name is None else f"{name}.weight"
        )
        self._bias = tape.parameter(
            Tensor.filled([features], 0.0, dtype=dtype), None if name is None else f"{name}.bias"
        )

    def express(self, value: Value) -> Value:
        """Records the layer norm of `value` over its last axis."""
        return layer_norm(value, self._weight, self._bias, self.eps)

    def parameters(self) -> list[Symbol]:
        """Weight, then bias."""
        return [self._weight.symbol, self._bias.symbol]

"""rms_norm and RMSNorm: rows divided by their root mean square along the last axis,
then scaled by a weight (`torch.nn.RMSNorm`, Llama's norm); one fused node."""

from __future__ import annotations

from typing import Any

from topos.errors import ShapeError
from topos.graph.symbol import Symbol
from topos.graph.tape import Tape
from topos.graph.value import Value
from topos.nn.module import Module
from topos.tensor import Tensor

#: Llama's.
EPS = 1e-6


def rms_norm(value: Value, weight: Value, eps: float = EPS) -> Value:
    """`value / sqrt(mean(value^2) + eps) * weight` over the last axis (`weight`: `[D]`):
    one `rms_norm` node, whose gradients are fused kernels too (topos.ops.primitives.rms_norm)."""
    features = value.shape[-1] if value.shape.rank else 0
    if weight.shape != (features,):
        raise ShapeError(f"rms_norm: weight {weight.shape} must be [{features}] for {value.shape}")
    return value.tape.record("rms_norm", (value, weight), eps=float(eps))


class RMSNorm(Module):
    """An RMS norm over `features`, weight 1 to start (named `<name>.weight`)."""

    def __init__(
        self,
        tape: Tape,
        features: int,
        name: str | None = None,
        eps: float = EPS,
        dtype: Any = None,
    ) -> None:
        self.name = name
        self.eps = eps
        self._weight = tape.parameter(
            Tensor.filled([features], 1.0, dtype=tape.dtype if dtype is None else dtype),
            None if name is None else f"{name}.weight",
        )

    @property
    def weight(self) -> Symbol:
        """The symbol of the weight parameter."""
        return self._weight.symbol

    def express(self, value: Value) -> Value:
        """Records the RMS norm of `value` over its last axis."""
        return rms_norm(value, self._weight, self.eps)

    def parameters(self) -> list[Symbol]:
        """The weight."""
        return [self._weight.symbol]

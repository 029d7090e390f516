"""WeightedLayer: a layer holding a weights parameter and, optionally, a bias parameter."""

from __future__ import annotations

from topos.graph.symbol import Symbol
from topos.graph.tape import Tape
from topos.nn.module import Module
from topos.tensor import Tensor


class WeightedLayer(Module):
    """Records its weights then its bias (when it has one) as parameters of `tape`, in
    that order; with a `name`, they are named `<name>.weight` and `<name>.bias`."""

    def __init__(
        self, tape: Tape, weights: Tensor, bias: Tensor | None, name: str | None = None
    ) -> None:
        self.name = name
        self._weights = tape.parameter(weights, None if name is None else f"{name}.weight")
        self._bias = (
            None if bias is None else tape.parameter(bias, None if name is None else f"{name}.bias")
        )

    @property
    def weights(self) -> Symbol:
        """The symbol of the weights parameter."""
        return self._weights.symbol

    @property
    def bias(self) -> Symbol | None:
        """The symbol of the bias parameter, or None for a bias-free layer."""
        return None if self._bias is None else self._bias.symbol

    def parameters(self) -> list[Symbol]:
        """Weights, then bias (if any)."""
        return [self.weights] if self._bias is None else [self.weights, self._bias.symbol]

"""WeightedLayer: a layer holding one weights and one bias parameter."""

from __future__ import annotations

from topos.graph.symbol import Symbol
from topos.graph.tape import Tape
from topos.nn.module import Module
from topos.tensor import Tensor


class WeightedLayer(Module):
    """Records its weights then its bias as parameters of `tape`, in that order."""

    def __init__(self, tape: Tape, weights: Tensor, bias: Tensor) -> None:
        self._weights = tape.parameter(weights)
        self._bias = tape.parameter(bias)

    @property
    def weights(self) -> Symbol:
        """The symbol of the weights parameter."""
        return self._weights.symbol

    @property
    def bias(self) -> Symbol:
        """The symbol of the bias parameter."""
        return self._bias.symbol

    def parameters(self) -> list[Symbol]:
        """Weights, then bias."""
        return [self.weights, self.bias]

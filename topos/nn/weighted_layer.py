"""WeightedLayer: a layer holding a weights parameter and, optionally, a bias parameter."""

from __future__ import annotations

from topos.graph.symbol import Symbol
from topos.graph.tape import Tape
from topos.graph.value import Value
from topos.nn.bias_rows import BiasRows
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
        self._bias_rows = None if self._bias is None else BiasRows(self._bias)

    def _bias_down(self, rows: int) -> Value:
        """The bias broadcast down `rows` rows, one node for every use (see BiasRows)."""
        assert self._bias_rows is not None
        return self._bias_rows.down(rows)

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

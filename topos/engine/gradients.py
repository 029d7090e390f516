"""Gradients: the engine sweep's result for one target."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from topos.errors import GraphError
from topos.graph.parameter_gradients import ParameterGradients
from topos.graph.symbol import Symbol
from topos.tensor import Tensor

if TYPE_CHECKING:
    from topos.graph.network import Network
    from topos.graph.parameters import Parameters


class Gradients:
    """The gradient of one target with respect to every parameter it reaches.

    The sweep frees each intermediate gradient once it has been passed on, so only
    the parameters' gradients are held; an unreached parameter's gradient is zero.
    """

    def __init__(self, network: Network, target: int, arrays: dict[int, np.ndarray]) -> None:
        self.network = network
        self.target = target
        self._arrays = arrays

    def of(self, symbol: Symbol) -> Tensor:
        """The gradient of one parameter."""
        index = self.network.index(symbol, "Gradients.of")
        if self.network.nodes[index].operation != "parameter":
            raise GraphError(
                f"Gradients.of: %{index} is a {self.network.nodes[index].operation}; "
                f"the sweep keeps only parameters' gradients"
            )
        array = self._arrays.get(index)
        if array is None:
            return Tensor.filled(self.network.nodes[index].shape, 0.0, dtype=self.network.dtype)
        return Tensor.adopt(np.asarray(array))

    def parameters(self, parameters: Parameters) -> ParameterGradients:
        """The gradient of each of `parameters`, in the form `Parameters.step` takes."""
        if parameters.network.origin != self.network.origin:
            raise GraphError("Gradients.parameters: the parameters belong to another network")
        return ParameterGradients(
            self.network.origin,
            {symbol.index: self.of(symbol) for symbol in parameters.symbols()},
        )

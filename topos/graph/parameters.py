"""Parameters: the caller-owned parameter payloads; `step` returns a new Parameters."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

import numpy as np

from topos.errors import GraphError, ShapeError
from topos.graph.parameter_gradients import ParameterGradients
from topos.graph.symbol import Symbol
from topos.tensor import Tensor

if TYPE_CHECKING:
    from topos.graph.network import Network

Update = Callable[[Tensor, Tensor], Tensor]


class Parameters:
    """One payload per parameter of a network; immutable, so every step makes a new one."""

    def __init__(self, network: Network, payloads: dict[int, Tensor]) -> None:
        self.network = network
        self._payloads = payloads

    def of(self, symbol: Symbol) -> Tensor:
        """The payload of one parameter."""
        index = self.network.index(symbol, "Parameters.of")
        try:
            return self._payloads[index]
        except KeyError:
            raise GraphError(f"Parameters.of: {symbol!r} is not a parameter") from None

    def symbols(self) -> list[Symbol]:
        """Every parameter symbol, in recording order."""
        return [self.network.symbol(index) for index in self._payloads]

    def items(self) -> Iterator[tuple[Symbol, Tensor]]:
        """(symbol, payload) pairs in recording order."""
        for index, payload in self._payloads.items():
            yield self.network.symbol(index), payload

    def named(self) -> dict[str, Tensor]:
        """The payloads of the named parameters, by name, in recording order."""
        return {name: self._payloads[index] for name, index in self.network.names.items()}

    def arrays(self) -> dict[int, object]:
        """The payloads as read-only arrays keyed by node index (what a run reads)."""
        return {index: payload.numpy() for index, payload in self._payloads.items()}

    def __len__(self) -> int:
        return len(self._payloads)

    def __iter__(self) -> Iterator[Symbol]:
        return iter(self.symbols())

    def replace(self, payloads: Mapping[Symbol | str, Tensor | np.ndarray]) -> Parameters:
        """A new Parameters with the payloads of `payloads` (keyed by parameter Symbol,
        the Value recorded for it, or name) in place of these, the others shared.

        Each must keep its parameter's shape and dtype: a NumPy array is taken (copied)
        only in the network's dtype, never cast, as feeds are."""
        replaced = dict(self._payloads)
        for key, payload in payloads.items():
            if isinstance(key, str):
                if key not in self.network.names:
                    raise GraphError(f"Parameters.replace: no parameter is named {key!r}")
                index = self.network.names[key]
            else:
                index = self.network.index(key, "Parameters.replace")
            if index not in self._payloads:
                raise GraphError(f"Parameters.replace: %{index} is not a parameter")
            current = self._payloads[index]
            if isinstance(payload, np.ndarray):
                if payload.dtype != current.dtype:
                    raise TypeError(
                        f"Parameters.replace: the payload for parameter %{index} is "
                        f"{payload.dtype}; the network computes in {current.dtype}"
                    )
                payload = Tensor(payload.shape, payload, dtype=current.dtype)
            if not isinstance(payload, Tensor):
                raise TypeError(
                    f"Parameters.replace: the payload for parameter %{index} is a "
                    f"{type(payload).__name__}, not a Tensor or a NumPy array"
                )
            if payload.shape != current.shape or payload.dtype != current.dtype:
                raise ShapeError(
                    f"Parameters.replace: parameter %{index} is {current.shape} "
                    f"{current.dtype}, not {payload.shape} {payload.dtype}"
                )
            replaced[index] = payload
        return Parameters(self.network, replaced)

    def _gradients_from(self, mapping: Mapping[Symbol, Tensor]) -> ParameterGradients:
        """A mapping of parameter symbols to Tensors, checked, as ParameterGradients."""
        gradients = {}
        for symbol, gradient in mapping.items():
            if not isinstance(gradient, Tensor):
                raise TypeError(
                    f"Parameters.step: the gradient of {symbol!r} is a "
                    f"{type(gradient).__name__}, not a Tensor"
                )
            gradients[self.network.index(symbol, "Parameters.step")] = gradient
        return ParameterGradients(self.network.origin, gradients)

    def step(self, gradients: ParameterGradients, update: Update) -> Parameters:
        """A new Parameters where each parameter with a gradient becomes
        `update(parameter, gradient)`; refuses an update that changes a shape or dtype."""
        if isinstance(gradients, Mapping) and not isinstance(gradients, ParameterGradients):
            gradients = self._gradients_from(gradients)
        if not isinstance(gradients, ParameterGradients):
            raise TypeError(
                "Parameters.step: pass what Gradients.parameters or Run.recorded_gradients "
                f"returns (or a mapping of parameter symbols to Tensors), not "
                f"{type(gradients).__name__}"
            )
        if gradients.origin != self.network.origin:
            raise GraphError("Parameters.step: the gradients belong to another network")
        payloads = {}
        for index, payload in self._payloads.items():
            gradient = gradients.by_index(index)
            if gradient is None:
                payloads[index] = payload
                continue
            updated = update(payload, gradient)
            if not isinstance(updated, Tensor):
                raise TypeError(
                    f"Parameters.step: the update returned {type(updated).__name__} "
                    f"for parameter %{index}, not a Tensor"
                )
            if updated.shape != payload.shape or updated.dtype != payload.dtype:
                raise ShapeError(
                    f"Parameters.step: the update turned parameter %{index} from "
                    f"{payload.shape} {payload.dtype} into {updated.shape} {updated.dtype}"
                )
            payloads[index] = updated
        return Parameters(self.network, payloads)

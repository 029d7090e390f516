"""ParameterGradients: the gradient of each parameter, what `Parameters.step` takes."""

from __future__ import annotations

from collections.abc import Iterator

from topos.errors import GraphError
from topos.graph.symbol import Symbol
from topos.tensor import Tensor


class ParameterGradients:
    """Maps parameter symbols to gradient payloads; both routes answer with one of these."""

    def __init__(self, origin: int, gradients: dict[int, Tensor]) -> None:
        self.origin = origin
        self._gradients = gradients

    def of(self, symbol: Symbol) -> Tensor:
        """The gradient of one parameter (its Symbol, or the Value recorded for it)."""
        symbol = getattr(symbol, "symbol", symbol)
        if not isinstance(symbol, Symbol):
            raise TypeError(f"gradients: expected a Symbol, got {type(symbol).__name__}")
        if symbol.origin != self.origin:
            raise GraphError(f"gradients: {symbol!r} belongs to another network")
        try:
            return self._gradients[symbol.index]
        except KeyError:
            raise GraphError(f"gradients: no gradient is held for {symbol!r}") from None

    def indices(self) -> list[int]:
        """The node indices of the parameters it holds gradients of, in its order."""
        return list(self._gradients)

    def by_index(self, index: int) -> Tensor | None:
        """The gradient of node `index`, or None when none is held."""
        return self._gradients.get(index)

    def __contains__(self, symbol: object) -> bool:
        symbol = getattr(symbol, "symbol", symbol)
        return (
            isinstance(symbol, Symbol)
            and symbol.origin == self.origin
            and symbol.index in self._gradients
        )

    def __getitem__(self, symbol: Symbol) -> Tensor:
        return self.of(symbol)

    def __iter__(self) -> Iterator[Symbol]:
        return (Symbol(self.origin, index) for index in self._gradients)

    def __len__(self) -> int:
        return len(self._gradients)

    def items(self) -> Iterator[tuple[Symbol, Tensor]]:
        """(symbol, gradient) pairs."""
        for index, gradient in self._gradients.items():
            yield Symbol(self.origin, index), gradient

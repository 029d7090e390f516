"""Adjoints: what `differentiate` returns, the target and one gradient symbol per parameter."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from topos.errors import GraphError
from topos.graph.symbol import Symbol


def _symbol_of(reference: Any, what: str) -> Symbol:
    """A Symbol, or the symbol of a Value (anything with `.symbol` naming one)."""
    symbol = getattr(reference, "symbol", reference)
    if not isinstance(symbol, Symbol):
        raise TypeError(f"{what}: expected a Symbol or Value, got {type(reference).__name__}")
    return symbol


class Adjoints:
    """Pairs each requested parameter symbol with the symbol of its recorded gradient.

    Read by parameter: `adjoints[w]` (or `adjoints.of(w)`, `w` a Symbol or the Value
    recorded for it) is the symbol of the gradient of the target with respect to `w`,
    what `run.of` reads after a run and `tape.value` turns back into a Value to record
    on (a gradient of a gradient)."""

    def __init__(self, target: Symbol, pairs: list[tuple[Symbol, Symbol]]) -> None:
        self.target = target
        self.pairs = tuple(pairs)
        self._by_parameter = dict(self.pairs)

    def roots(self) -> list[Symbol]:
        """`[target, gradient...]`: what a forward-only plan must keep readable."""
        return [self.target, *(gradient for _, gradient in self.pairs)]

    def of(self, parameter: Symbol | Any) -> Symbol:
        """The symbol of the recorded gradient with respect to `parameter`."""
        symbol = _symbol_of(parameter, "Adjoints.of")
        try:
            return self._by_parameter[symbol]
        except KeyError:
            raise GraphError(
                f"Adjoints.of: {symbol!r} is not among the {len(self.pairs)} node(s) "
                f"differentiated with respect to"
            ) from None

    def __getitem__(self, parameter: Symbol | Any) -> Symbol:
        return self.of(parameter)

    def __contains__(self, parameter: object) -> bool:
        symbol = getattr(parameter, "symbol", parameter)
        return isinstance(symbol, Symbol) and symbol in self._by_parameter

    def parameters(self) -> list[Symbol]:
        """The symbols differentiated with respect to, in the order asked."""
        return [parameter for parameter, _ in self.pairs]

    def __iter__(self) -> Iterator[tuple[Symbol, Symbol]]:
        return iter(self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

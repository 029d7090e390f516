"""Adjoints: what `differentiate` returns, the target and one gradient symbol per parameter."""

from __future__ import annotations

from collections.abc import Iterator

from topos.graph.symbol import Symbol


class Adjoints:
    """Pairs each requested parameter symbol with the symbol of its recorded gradient."""

    def __init__(self, target: Symbol, pairs: list[tuple[Symbol, Symbol]]) -> None:
        self.target = target
        self.pairs = tuple(pairs)

    def roots(self) -> list[Symbol]:
        """`[target, gradient...]`: what a forward-only plan must keep readable."""
        return [self.target, *(gradient for _, gradient in self.pairs)]

    def __iter__(self) -> Iterator[tuple[Symbol, Symbol]]:
        return iter(self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

"""Module: a layer that owns parameter symbols and records its expression on demand."""

from __future__ import annotations

from topos.graph.symbol import Symbol
from topos.graph.value import Value


class Module:
    """Base class of layers: `express(value)` records the layer, `parameters()` names its state."""

    def express(self, value: Value) -> Value:
        """Records this layer applied to `value` and returns the result."""
        raise NotImplementedError

    def parameters(self) -> list[Symbol]:
        """The layer's parameter symbols, in a fixed order."""
        raise NotImplementedError

"""Module: a layer that owns parameter symbols and records its expression on demand."""

from __future__ import annotations

from topos.graph.symbol import Symbol
from topos.graph.value import Value


class Module:
    """Base class of layers: `express(value)` records the layer, `parameters()` names its
    parameters. `training` says which form `express` records (a batch norm's batch
    statistics, or its running ones): `eval()` and `train()` switch it, as in PyTorch,
    for the recordings made after."""

    training: bool = True

    def train(self, mode: bool = True) -> Module:
        """Records the training form from now on (or the evaluation form, with False)."""
        self.training = bool(mode)
        return self

    def eval(self) -> Module:
        """Records the evaluation form from now on: `train(False)`."""
        return self.train(False)

    def express(self, value: Value) -> Value:
        """Records this layer applied to `value` and returns the result."""
        raise NotImplementedError

    def parameters(self) -> list[Symbol]:
        """The layer's parameter symbols, in a fixed order."""
        raise NotImplementedError

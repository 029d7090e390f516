"""ParameterMemory: the training loop's parameters, in memory the loop owns and updates in place.

Who owns what. A `Parameters` is immutable: `Network.parameters()` hands out the
network's initial payloads, and `Parameters.step` (and every optimizer's `step`)
returns new payloads, leaving the caller's alone. A training loop need not pay for
that twice over: it copies the initial payloads once into one block of its own and
gives the plans a read-only `Parameters` over the block. Once a step's runs are done,
nothing reads the previous parameters any more (its gradients are fresh buffers the
loop owns, which never share the block), so an optimizer that offers `step_in_place`
writes the update straight into the block, with the same arithmetic as its `step`.
An optimizer without it is stepped functionally and its result copied back.

So `parameters` is the loop's current state, not a snapshot: it changes with every
step. `snapshot()` gives a `Parameters` of its own to keep.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topos.graph.parameter_gradients import ParameterGradients
from topos.graph.parameters import Parameters
from topos.tensor import Tensor


class ParameterMemory:
    """The parameters of a training loop in one block it owns (see the module)."""

    def __init__(self, initial: Parameters) -> None:
        self.network = initial.network
        arrays = initial.arrays()
        dtype = self.network.dtype
        self.block = np.empty(sum(array.size for array in arrays.values()), dtype=dtype)
        self.arrays: dict[int, np.ndarray] = {}
        start = 0
        for index, array in arrays.items():
            view = self.block[start : start + array.size].reshape(array.shape)
            view[...] = array
            self.arrays[index] = view
            start += array.size
        self.parameters = Parameters(
            self.network, {index: Tensor.adopt(array) for index, array in self.arrays.items()}
        )

    def update(self, optimizer: Any, gradients: ParameterGradients) -> None:
        """One optimizer step written into the block: in place when the optimizer offers
        `step_in_place`, else its functional `step` copied back."""
        named = getattr(optimizer, "name_parameters", None)
        if named is not None:
            # An optimizer that chooses by name (AdamW's decays) learns the names here.
            named(self.network.names)
        in_place = getattr(optimizer, "step_in_place", None)
        if in_place is None:
            current = self.parameters.arrays()
            stepped = optimizer.step(self.parameters, gradients)
            for index, array in stepped.arrays().items():
                if array is not current[index]:
                    self.arrays[index][...] = array
            return
        in_place(self.arrays, self._apart(gradients))

    def _apart(self, gradients: ParameterGradients) -> ParameterGradients:
        """`gradients`, any of them that shares the block copied out first, so an update
        in place never reads a parameter it has already written."""
        shared = {
            symbol.index: Tensor(gradient.shape, gradient.numpy(), dtype=gradient.dtype)
            for symbol, gradient in gradients.items()
            if np.may_share_memory(gradient.numpy(), self.block)
        }
        if not shared:
            return gradients
        copied = {symbol.index: gradient for symbol, gradient in gradients.items()}
        return ParameterGradients(gradients.origin, {**copied, **shared})

    def snapshot(self) -> Parameters:
        """The current parameters as a `Parameters` of their own, which later steps leave
        alone."""
        return Parameters(
            self.network,
            {
                index: Tensor(array.shape, array, dtype=array.dtype)
                for index, array in self.arrays.items()
            },
        )

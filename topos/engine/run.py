"""Run: the payloads of one forward execution, and the two ways to get gradients from it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from topos.autodiff.chain_rule import sweep
from topos.autodiff.eager_algebra import EagerAlgebra
from topos.engine.gradients import Gradients
from topos.errors import GraphError
from topos.graph.adjoints import Adjoints
from topos.graph.parameter_gradients import ParameterGradients
from topos.graph.symbol import Symbol
from topos.indices import Indices
from topos.tensor import Tensor

if TYPE_CHECKING:
    from topos.engine.plan import Plan
    from topos.graph.parameters import Parameters


class Run:
    """What one `Plan.forward` computed: the readable payloads, read with `of`."""

    def __init__(
        self, plan: Plan, buffers: list[Any], parameters: Parameters, generation: int = 0
    ) -> None:
        self.plan = plan
        self._buffers = buffers
        self.parameters = parameters
        self.generation = generation

    def _check_fresh(self, index: int, what: str) -> None:
        """Refuses to read an arena buffer that a later run of the plan has overwritten."""
        if self.plan.generation != self.generation:
            raise GraphError(
                f"{what}: %{index} lives in the plan's arena, which a later forward has "
                f"overwritten; read what you need from a run before running its plan again "
                f"(only roots stay readable)"
            )

    def _readable_index(self, symbol: Symbol, what: str) -> int:
        index = self.plan.network.index(symbol, what)
        if not self.plan.evaluates(index):
            raise GraphError(f"{what}: %{index} is not evaluated by this plan")
        if index not in self.plan.readable:
            raise GraphError(
                f"{what}: %{index} was {self.plan.liveness_of(index)}; in a forward plan "
                f"only the roots stay readable"
            )
        return index

    def of(self, symbol: Symbol) -> Tensor | Indices:
        """The payload of a readable node (a root, or anything in the retain posture).

        A root is its run's own buffer; anything else is copied out of the arena
        (which the next run reuses), and only while this is the plan's latest run.
        """
        index = self._readable_index(symbol, "Run.of")
        array = self._buffers[index]
        node = self.plan.network.nodes[index]
        if node.holds_indices:
            return Indices(array.shape, array, node.attributes["classes"])
        if index in self.plan.roots or self.plan.network.nodes[index].is_source:
            return Tensor.adopt(array)
        self._check_fresh(index, "Run.of")
        return Tensor(array.shape, array, dtype=array.dtype)

    def backward(self, target: Symbol) -> Gradients:
        """The engine route: sweeps the chain rule eagerly from the scalar `target`."""
        plan = self.plan
        if plan.posture != "retain":
            raise GraphError(
                "backward: this run's plan was lowered in the forward posture, which frees "
                "the buffers a backward sweep reads; lower it with entry(roots).backward()"
            )
        index = self._readable_index(target, "backward")
        self._check_fresh(index, "backward")
        schedule = plan.backward_schedule(index)
        network = plan.network
        backward = plan.backward_plan(index)
        algebra = EagerAlgebra(network.dtype, backward.calls())
        wrt = [i for i in network.parameter_indices if plan.evaluates(i)]
        buffers = self._buffers
        gradients = sweep(
            network.nodes,
            schedule,
            index,
            wrt,
            algebra,
            buffers.__getitem__,
            algebra.constant(1.0, network.nodes[index].shape),
        )
        backward.misses += algebra.misses
        # A gradient must outlive the arenas' next run. While the sweep follows its plan
        # every returned gradient is written into a fresh buffer; a sweep that left the
        # plan (a miss) runs its later kernels unplanned, which may return views.
        blocks = plan.arena_blocks()
        for key, array in gradients.items():
            if any(np.may_share_memory(array, block) for block in blocks):
                gradients[key] = np.array(array)
        return Gradients(network, index, gradients)

    def recorded_gradients(self, adjoints: Adjoints) -> ParameterGradients:
        """The recorded route: reads each parameter's gradient off this run's roots."""
        gradients = {}
        for parameter, gradient in adjoints:
            index = self.plan.network.index(parameter, "recorded_gradients")
            array = self._buffers[self._readable_index(gradient, "recorded_gradients")]
            gradients[index] = Tensor.adopt(np.asarray(array))
        return ParameterGradients(self.plan.network.origin, gradients)

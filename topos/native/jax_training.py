"""JaxTraining: one route of a JAX workload, compiled, ready to step and to be compared."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import numpy as np

from topos.native.jax_optimizer import optimizer_of
from topos.native.jax_routes import takes_keyword
from topos.native.jax_workload import JaxWorkload
from topos.native.native_data import NativeData
from topos.native.native_training import (
    NativeProgram,
    ReferenceComparison,
)
from topos.native.step_tensors import StepTensors, jax_step_tensors
from topos.training.gradient_errors import gradient_errors_on_model_scale

#: The route every other is judged against: the step as written, no checkpoint.
REFERENCE_ROUTE = "jit"


class JaxTraining:
    """Route `route` of `workload` on the data from `directory` for `steps` steps: the
    seeded parameters, the optimizer's state, and the route's whole step (its loss's
    `value_and_grad` and the optimizer's update) jitted and compiled ahead of time, so
    compiling is part of getting ready, never of a measured step. The parameters and the
    optimizer's state are donated to each step, as a JAX user's step donates them."""

    def __init__(
        self, workload: JaxWorkload, route: str, directory: str | None, steps: int
    ) -> None:
        import jax

        self.workload = workload
        self.route_name = route
        self.route = workload.route(route)
        self.steps = steps
        self.dataset: NativeData = workload.native_data(directory)
        if len(self.dataset) < workload.batch_size:
            raise ValueError(
                f"workload {workload.name!r}: {len(self.dataset)} samples, fewer than a "
                f"batch of {workload.batch_size}"
            )
        self.optimizer = optimizer_of(workload.optimizer)
        # Copies, every buffer its own: the step donates the parameters and the state,
        # and a buffer donated twice (an optimizer state that shares one) is refused.
        self.parameters = _copied(workload.seeded_parameters())
        self.state = _copied(self.optimizer.init(self.parameters))
        self.loss_of = self.route.make(workload.loss)
        self.program = NativeProgram()
        self.version = str(jax.__version__)
        step = jax.jit(self._step_function(self.loss_of), donate_argnums=(0, 1))
        self._step = step.lower(self.parameters, self.state, self.arrays(0), self.key(0)).compile()

    def _keywords(self, key: Any) -> dict[str, Any]:
        """What the loss is given besides the parameters and the batch: step t's key if
        it takes one."""
        return {"key": key} if takes_keyword(self.workload.loss, "key") else {}

    def _step_function(self, loss_of: Callable[..., Any]) -> Callable[..., Any]:
        """The whole step of `loss_of`: loss and gradients, then the optimizer's update."""
        import jax

        update = self.optimizer.update

        def step(parameters: Any, state: Any, batch: tuple[Any, ...], key: Any) -> Any:
            loss, gradients = jax.value_and_grad(loss_of)(parameters, *batch, **self._keywords(key))
            parameters, state = update(parameters, gradients, state)
            return parameters, state, loss

        return step

    def _gradient_function(self, loss_of: Callable[..., Any]) -> Callable[..., Any]:
        """`loss_of`'s loss and gradients alone, jitted: step 0's comparison."""
        import jax

        def gradients(parameters: Any, batch: tuple[Any, ...], key: Any) -> Any:
            return jax.value_and_grad(loss_of)(parameters, *batch, **self._keywords(key))

        return jax.jit(gradients)

    def arrays(self, step: int) -> tuple[Any, ...]:
        """Step `step`'s batch, as arrays on JAX's device."""
        import jax

        arrays = self.dataset.batch(step, self.workload.batch_size, self.workload.shuffle_state)
        return tuple(jax.device_put(array) for array in arrays)

    def key(self, step: int) -> Any:
        """Step `step`'s random key: the same in every route, whatever the others drew."""
        import jax

        return jax.random.fold_in(jax.random.key(self.workload.seed), step)

    def step(self, step: int) -> np.floating:
        """Trains one step; returns its loss as a float32 (its bits are diffed)."""
        self.parameters, self.state, loss = self._step(
            self.parameters, self.state, self.arrays(step), self.key(step)
        )
        # Reading the loss back waits for the step: the step's time is its computation's.
        return np.asarray(loss, np.float32)[()]

    def warm_up(self) -> None:
        """Step 0 run once on copies of the parameters and the optimizer's state (the
        step donates what it is given), its results thrown away: the parameters, the
        optimizer's state and the batch order untouched."""
        import jax

        parameters, state = _copied(self.parameters), _copied(self.state)
        results = self._step(parameters, state, self.arrays(0), self.key(0))
        jax.block_until_ready(results)
        del parameters, state, results

    def step_tensors(self) -> StepTensors | None:
        """The compiled step's own bytes as XLA assigned them: temp + output - alias
        (`step_tensors.jax_step_tensors`; resident memory cannot see them, see there).
        Read from the compiled program, nothing run; None where the backend gives no
        analysis."""
        return jax_step_tensors(self._step)

    def compare_with_reference(self) -> ReferenceComparison:
        """Step 0's loss and gradients by this route and by `jit`, from the same
        parameters, batch and key, each parameter's gradient compared by bits and by
        its error on the model's scale (`gradient_errors_on_model_scale`). JAX keeps no
        random state between calls (keys are arguments), so there is no generator state
        to compare."""
        import jax

        from topos.native.jax_routes import jit

        batch, key = self.arrays(0), self.key(0)
        expected, expected_gradients = self._gradient_function(jit(self.workload.loss))(
            self.parameters, batch, key
        )
        if self.route_name == REFERENCE_ROUTE:
            # The reference against itself: one compilation, not two of one program.
            actual, gradients = expected, expected_gradients
        else:
            actual, gradients = self._gradient_function(self.loss_of)(self.parameters, batch, key)
        comparison = ReferenceComparison(
            loss_identical=_bits(actual) == _bits(expected), rng_matches_reference=None
        )
        wanted = dict(_named_leaves(expected_gradients))
        pairs = []
        for name, got in _named_leaves(gradients):
            reference = wanted.get(name)
            if reference is None or reference.shape != got.shape:
                comparison.differing_gradients.append(name)
                continue
            pairs.append((name, np.asarray(got), np.asarray(reference)))
            if not np.array_equal(np.asarray(got), np.asarray(reference)):
                comparison.differing_gradients.append(name)
        comparison.gradient_errors, comparison.gradient_scale = gradient_errors_on_model_scale(
            pairs
        )
        del expected_gradients, gradients, wanted
        # The comparison's two compiled programs are not the route's: freed before ready.
        jax.clear_caches()
        gc.collect()
        return comparison


def _copied(tree: Any) -> Any:
    """A pytree whose every array leaf is a fresh copy (`None` and scalars as they are)."""
    import jax
    import jax.numpy as jnp

    return jax.tree.map(lambda leaf: jnp.array(leaf, copy=True), tree)


def _named_leaves(tree: Any) -> list[tuple[str, Any]]:
    """A pytree's leaves, each named by its path (`layers/0/attention`)."""
    import jax

    return [
        (jax.tree_util.keystr(path, simple=True, separator="/"), leaf)
        for path, leaf in jax.tree_util.tree_leaves_with_path(tree)
    ]


def _bits(loss: Any) -> int:
    """A float32 loss's bits."""
    return int(np.asarray(loss, np.float32).view(np.uint32))

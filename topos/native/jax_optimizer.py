"""JaxOptimizer: how a JAX workload's parameters move, as a plain pair of functions.

A JAX workload names its optimizer in any of three ways, each made a `JaxOptimizer` by
`optimizer_of`:

- a `JaxOptimizer` (`init(parameters) -> state`, `update(parameters, gradients, state)
  -> (parameters, state)`), such as the built-ins `sgd` and `adam` below, written in
  `jax.numpy` so that optax is not needed;
- a plain function `update(parameters, gradients, state) -> (parameters, state)`, whose
  state starts as `None`;
- an optax `GradientTransformation` (anything with optax's `init(parameters)` and
  `update(gradients, state, parameters) -> (updates, state)`), its updates added to the
  parameters as `optax.apply_updates` adds them.

The update runs inside the route's jitted step, so it must be a function of arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: `update(parameters, gradients, state) -> (parameters, state)`.
Update = Callable[[Any, Any, Any], tuple[Any, Any]]


@dataclass(frozen=True)
class JaxOptimizer:
    """An optimizer as two pure functions of pytrees: `init(parameters)` gives the state
    (`None` for plain SGD), `update(parameters, gradients, state)` the new parameters and
    state."""

    init: Callable[[Any], Any]
    update: Update


def sgd(learning_rate: float, momentum: float = 0.0) -> JaxOptimizer:
    """Stochastic gradient descent, with heavy-ball momentum when `momentum` is not 0
    (`velocity = momentum * velocity + gradient`, as PyTorch's SGD)."""
    import jax

    if momentum == 0.0:

        def plain(parameters: Any, gradients: Any, state: Any) -> tuple[Any, Any]:
            moved = jax.tree.map(lambda p, g: p - learning_rate * g, parameters, gradients)
            return moved, state

        return JaxOptimizer(lambda parameters: None, plain)

    def init(parameters: Any) -> Any:
        return jax.tree.map(lambda p: p * 0, parameters)

    def with_momentum(parameters: Any, gradients: Any, velocity: Any) -> tuple[Any, Any]:
        velocity = jax.tree.map(lambda v, g: momentum * v + g, velocity, gradients)
        moved = jax.tree.map(lambda p, v: p - learning_rate * v, parameters, velocity)
        return moved, velocity

    return JaxOptimizer(init, with_momentum)


def adam(
    learning_rate: float, beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8
) -> JaxOptimizer:
    """Adam (Kingma and Ba), its moments bias-corrected: `optax.adam`'s formula."""
    import jax
    import jax.numpy as jnp

    def init(parameters: Any) -> Any:
        # Two moments of their own: the step donates its state, each buffer once.
        first = jax.tree.map(jnp.zeros_like, parameters)
        second = jax.tree.map(jnp.zeros_like, parameters)
        return jnp.zeros((), jnp.int32), first, second

    def update(parameters: Any, gradients: Any, state: Any) -> tuple[Any, Any]:
        count, first, second = state
        count = count + 1
        first = jax.tree.map(lambda m, g: beta1 * m + (1 - beta1) * g, first, gradients)
        second = jax.tree.map(lambda v, g: beta2 * v + (1 - beta2) * g * g, second, gradients)
        first_correction = 1 - beta1 ** count.astype(jnp.float32)
        second_correction = 1 - beta2 ** count.astype(jnp.float32)

        def moved(p: Any, m: Any, v: Any) -> Any:
            corrected = (m / first_correction) / (jnp.sqrt(v / second_correction) + epsilon)
            return (p - learning_rate * corrected).astype(p.dtype)

        return jax.tree.map(moved, parameters, first, second), (count, first, second)

    return JaxOptimizer(init, update)


def optimizer_of(optimizer: Any) -> JaxOptimizer:
    """`optimizer` (a `JaxOptimizer`, an optax-style transformation or a plain update) as
    a `JaxOptimizer`; TypeError, in one line, for anything else."""
    if isinstance(optimizer, JaxOptimizer):
        return optimizer
    if callable(getattr(optimizer, "init", None)) and callable(getattr(optimizer, "update", None)):
        return _from_transformation(optimizer)
    if callable(optimizer):
        return JaxOptimizer(lambda parameters: None, optimizer)
    raise TypeError(
        f"a JaxWorkload's optimizer is a JaxOptimizer (topos.native.sgd, adam), an optax "
        f"transformation or a function update(parameters, gradients, state), not a "
        f"{type(optimizer).__name__}"
    )


def _from_transformation(transformation: Any) -> JaxOptimizer:
    """An optax `GradientTransformation` as a `JaxOptimizer`: its updates applied as
    `optax.apply_updates` applies them (added, in each parameter's dtype)."""
    import jax

    def update(parameters: Any, gradients: Any, state: Any) -> tuple[Any, Any]:
        updates, state = transformation.update(gradients, state, parameters)
        moved = jax.tree.map(lambda p, u: (p + u).astype(p.dtype), parameters, updates)
        return moved, state

    return JaxOptimizer(transformation.init, update)

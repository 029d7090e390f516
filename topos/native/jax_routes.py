"""The routes every JAX workload offers: its loss under `jax.checkpoint` policies.

Each maker takes the workload's loss `loss(parameters, *batch, **keywords)` and returns
the route's loss of the same signature; topos differentiates it (`jax.value_and_grad`)
and jits the whole step, the optimizer's update within it.

- `jit`: the loss as written, no checkpoint; the reference.
- `checkpoint-nothing-saveable`: `jax.checkpoint` with `nothing_saveable`: nothing but
  the inputs kept for the backward pass, everything recomputed.
- `checkpoint-dots-saveable`: `dots_with_no_batch_dims_saveable`: the matrix products
  without batch dimensions kept, the rest (norms, activations, attention) recomputed.
- `checkpoint-names:<a+b>`: `save_only_these_names("a", "b")`: only the values the loss
  named with `jax.ad_checkpoint.checkpoint_name(value, "a")` kept.

Where the checkpoint goes: a loss that takes a `remat` keyword is given
`jax.checkpoint` under the route's policy, to wrap each of its blocks (`remat(block)(
parameters, hidden)`), as a transformer checkpoints layer by layer; the `jit` route gives
it the identity. A loss without `remat` is checkpointed whole, which keeps only its
inputs but recomputes the whole forward pass at once in the backward one: the peak is
then rarely lower.

XLA compiles each route as a program of its own, free to fuse and order it differently,
so the routes are judged by agreement with `jit` (and said to be bit-identical where
every step's loss is).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from topos.names import checkpoint_names_of
from topos.native.native_route import NativeRoute


def takes_keyword(function: Callable[..., Any], name: str) -> bool:
    """Whether `function` names the keyword argument `name` (`remat`, `key`): a loss
    says so in its signature what topos passes it (`**keywords` alone does not)."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin or C function: no such keyword
        return False
    found = parameters.get(name)
    return found is not None and found.kind is not inspect.Parameter.POSITIONAL_ONLY


def _unchanged(block: Callable[..., Any]) -> Callable[..., Any]:
    """The `jit` route's `remat`: the block as it is."""
    return block


def jit(loss: Callable[..., Any]) -> Callable[..., Any]:
    """The loss as written (a `remat` it takes given the identity): the reference."""
    if takes_keyword(loss, "remat"):
        return functools.partial(loss, remat=_unchanged)
    return loss


def checkpointed(policy: Callable[[], Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A maker checkpointing the loss under the policy `policy()` gives (made when the
    route is, in its worker: JAX is imported there only): block by block where the loss
    takes `remat`, else the whole loss."""

    def make(loss: Callable[..., Any]) -> Callable[..., Any]:
        import jax

        chosen = policy()
        if takes_keyword(loss, "remat"):
            return functools.partial(loss, remat=functools.partial(jax.checkpoint, policy=chosen))

        # The batch and keywords travel as pytrees: jax.checkpoint sees arrays only.
        def whole(parameters: Any, batch: tuple[Any, ...], keywords: dict[str, Any]) -> Any:
            return loss(parameters, *batch, **keywords)

        remade = jax.checkpoint(whole, policy=chosen)
        return lambda parameters, *batch, **keywords: remade(parameters, batch, keywords)

    return make


def _nothing_saveable() -> Any:
    import jax

    return jax.checkpoint_policies.nothing_saveable


def _dots_saveable() -> Any:
    import jax

    return jax.checkpoint_policies.dots_with_no_batch_dims_saveable


#: The fixed-name routes, in the order they are listed.
JAX_ROUTES: dict[str, NativeRoute] = {
    # The reference is exact with itself: its repeats are judged by bits, as a plan
    # run twice is.
    "jit": NativeRoute(jit, exact=True, description="jax.jit, no checkpoint"),
    "checkpoint-nothing-saveable": NativeRoute(
        checkpointed(_nothing_saveable),
        exact=False,
        description="jax.checkpoint(policy=nothing_saveable), jitted",
    ),
    "checkpoint-dots-saveable": NativeRoute(
        checkpointed(_dots_saveable),
        exact=False,
        description="jax.checkpoint(policy=dots_with_no_batch_dims_saveable), jitted",
    ),
}


def jax_route(name: str) -> NativeRoute | None:
    """The built-in route called `name` (a `checkpoint-names:<a+b>` among them), or None."""
    if name in JAX_ROUTES:
        return JAX_ROUTES[name]
    names = checkpoint_names_of(name)
    if names is None:
        return None

    def saving_names() -> Any:
        import jax

        return jax.checkpoint_policies.save_only_these_names(*names)

    return NativeRoute(
        checkpointed(saving_names),
        exact=False,
        description=f"jax.checkpoint(policy=save_only_these_names({', '.join(names)})), jitted",
    )

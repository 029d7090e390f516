"""JaxWorkload: a training step written in plain JAX, graded by its routes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from topos.native.native_data import BUILT_IN_DATA, NativeData, native_data_of
from topos.native.native_route import JaxRouteMaker, NativeRoute
from topos.native.native_workload import NativeWorkload


@dataclass(frozen=True)
class JaxWorkload(NativeWorkload):
    """A JAX training step, as a user writes one:

    - `parameters(key)`: makes the parameters (a pytree of arrays) from
      `jax.random.key(seed)`, so every route starts from the same ones;
    - `loss(parameters, *batch)`: the scalar loss of one batch (a tuple of arrays). If it
      takes a keyword `remat`, the checkpointing routes pass `jax.checkpoint` under their
      policy for it to wrap each block (`remat(block)(layer, hidden)`), the `jit` route
      the identity; else they checkpoint the whole loss. If it takes a keyword `key`, it
      gets step t's random key (dropout), the same in every route;
    - `optimizer`: a `JaxOptimizer` (`topos.native.sgd`, `adam`), a plain function
      `update(parameters, gradients, state) -> (parameters, state)` (state starting
      `None`), or an optax transformation;
    - `data`: the training samples: a function of the `--data` directory (`None` without
      one) returning arrays of one length along their first axis, or the name of a topos
      dataset (`cifar10`, `mnist`: images and labels);
    - `batch_size`; `extra_routes`: routes of your own by name, each a `NativeRoute` or
      a function `make(loss) -> loss` (judged by agreement with `jit`);
    - `seed` (parameters; step t's key is `fold_in(key(seed), t)`), `shuffle_state` (the
      batch order).
    """

    name: str
    parameters: Callable[[Any], Any]
    loss: Callable[..., Any]
    optimizer: Any
    data: Callable[[str | None], Sequence[Any]] | str
    batch_size: int
    extra_routes: Mapping[str, NativeRoute | JaxRouteMaker] = field(default_factory=dict)
    defaults: tuple[str, ...] = ("jit", "checkpoint-nothing-saveable")
    seed: int = 0
    shuffle_state: int = 1
    framework: str = "jax"
    #: JAX cannot be told a thread count (see `topos.peers.peer_threads`): XLA's pool
    #: takes the process's cores, and the result says so.
    threads: None = None

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"JaxWorkload {self.name!r}: batch_size must be at least 1")
        if self.threads is not None:
            raise ValueError(
                f"JaxWorkload {self.name!r}: JAX takes no thread count (XLA sizes its pool "
                f"from the process's cores); leave threads unset"
            )
        if isinstance(self.data, str) and self.data not in BUILT_IN_DATA:
            raise ValueError(
                f"JaxWorkload {self.name!r}: data {self.data!r} names no topos dataset; "
                f"name one of {', '.join(BUILT_IN_DATA)} or give a function returning arrays"
            )

    @property
    def offered_routes(self) -> list[str]:
        """The built-in routes (`topos.native.jax_routes`) and the workload's own."""
        from topos.names import JAX_NATIVE_ROUTES

        return [
            *JAX_NATIVE_ROUTES,
            *(name for name in self.extra_routes if name not in JAX_NATIVE_ROUTES),
        ]

    @property
    def default_routes(self) -> tuple[str, ...]:
        """What `topos grade` grades of it unless `--routes` says otherwise."""
        return self.defaults

    @property
    def reference_route(self) -> str:
        """`jit`: the step as written, no checkpoint."""
        return "jit"

    def route(self, name: str) -> NativeRoute:
        """The route called `name`: the workload's own first, then the built-in ones."""
        from topos.native.jax_routes import jax_route

        own = self.extra_routes.get(name)
        if own is not None:
            return own if isinstance(own, NativeRoute) else NativeRoute(own, exact=False)
        built_in = jax_route(name)
        if built_in is None:
            raise ValueError(
                f"workload {self.name!r} has no route {name!r}; its routes are "
                f"{', '.join(self.offered_routes)}, or checkpoint-names:<a+b>"
            )
        return built_in

    def training(self, route: str, directory: str | None, steps: int) -> Any:
        """Route `route` ready to train (`topos.native.jax_training.JaxTraining`)."""
        from topos.native.jax_training import JaxTraining

        return JaxTraining(self, route, directory, steps)

    def native_data(self, directory: str | None) -> NativeData:
        """The training samples, from `directory` where the data reads one."""
        return native_data_of(self.data, self.name, directory)

    def seeded_parameters(self) -> Any:
        """The parameters as `parameters` makes them from `jax.random.key(seed)`."""
        import jax

        return self.parameters(jax.random.key(self.seed))

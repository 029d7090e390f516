"""TorchWorkload: a training step written in plain PyTorch, graded by its routes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from topos.native.native_data import BUILT_IN_DATA, NativeData, native_data_of
from topos.native.native_route import NativeRoute, RouteMaker
from topos.native.native_workload import NativeWorkload


@dataclass(frozen=True)
class TorchWorkload(NativeWorkload):
    """A PyTorch training step, as a user writes one:

    - `model`: makes the module, called after `torch.manual_seed(seed)`, so every route
      starts from the same parameters;
    - `loss(model, *batch)`: the scalar loss of one batch (a tuple of tensors);
    - `optimizer(parameters)`: makes the optimizer, e.g. `torch.optim.AdamW(p, lr=1e-3)`;
    - `data`: the training samples: a function of the `--data` directory (`None` without
      one) returning arrays or tensors of one length along their first axis, or the name
      of a topos dataset (`cifar10`, `mnist`: images and labels);
    - `batch_size`; `blocks(model)`: the modules the checkpointing routes wrap (a
      transformer's layers); `routes`: routes of your own by name, each a `NativeRoute`
      or a function `make(model, loss, blocks) -> loss_of(*batch)`;
    - `seed` (parameters; step t's random numbers come from `seed`, `t`), `shuffle_state`
      (the batch order), `threads` (PyTorch's intra-op threads; one by default, so a
      step is deterministic and routes compare on equal terms).
    """

    name: str
    model: Callable[[], Any]
    loss: Callable[..., Any]
    optimizer: Callable[[Iterable[Any]], Any]
    data: Callable[[str | None], Sequence[Any]] | str
    batch_size: int
    blocks: Callable[[Any], Iterable[Any]] | None = None
    extra_routes: Mapping[str, NativeRoute | RouteMaker] = field(default_factory=dict)
    defaults: tuple[str, ...] = ("eager", "checkpoint")
    seed: int = 0
    shuffle_state: int = 1
    threads: int | None = 1
    framework: str = "torch"

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"TorchWorkload {self.name!r}: batch_size must be at least 1")
        if isinstance(self.data, str) and self.data not in BUILT_IN_DATA:
            raise ValueError(
                f"TorchWorkload {self.name!r}: data {self.data!r} names no topos dataset; "
                f"name one of {', '.join(BUILT_IN_DATA)} or give a function returning arrays"
            )

    @property
    def offered_routes(self) -> list[str]:
        """The built-in routes (`topos.native.torch_routes`) and the workload's own."""
        from topos.names import TORCH_NATIVE_ROUTES

        return [
            *TORCH_NATIVE_ROUTES,
            *(name for name in self.extra_routes if name not in TORCH_NATIVE_ROUTES),
        ]

    @property
    def default_routes(self) -> tuple[str, ...]:
        """What `topos grade` grades of it unless `--routes` says otherwise."""
        return self.defaults

    def route(self, name: str) -> NativeRoute:
        """The route called `name`: the workload's own first, then the built-in ones."""
        from topos.native.torch_routes import torch_route

        own = self.extra_routes.get(name)
        if own is not None:
            return own if isinstance(own, NativeRoute) else NativeRoute(own, exact=True)
        built_in = torch_route(name)
        if built_in is None:
            raise ValueError(
                f"workload {self.name!r} has no route {name!r}; its routes are "
                f"{', '.join(self.offered_routes)}, or compile-budget-<0 to 1>"
            )
        return built_in

    @property
    def frontier_references(self) -> tuple[str, ...]:
        """What `topos frontier` grades beside the compile budgets unless told: eager,
        and the checkpointing routes where the workload names blocks to checkpoint."""
        if self.blocks is None:
            return ("eager",)
        return ("eager", "checkpoint", "selective")

    @property
    def reference_route(self) -> str:
        """`eager`: the step as written."""
        return "eager"

    def training(self, route: str, directory: str | None, steps: int) -> Any:
        """Route `route` ready to train (`topos.native.torch_training.TorchTraining`)."""
        from topos.native.torch_training import TorchTraining

        return TorchTraining(self, route, directory, steps)

    def native_data(self, directory: str | None) -> NativeData:
        """The training samples, from `directory` where the data reads one."""
        return native_data_of(self.data, self.name, directory)

    def seeded_model(self) -> Any:
        """The module as `model` makes it after `torch.manual_seed(seed)`."""
        import torch

        torch.manual_seed(self.seed)
        return self.model()

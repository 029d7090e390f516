"""NativeWorkload: what every workload written in a framework itself says of itself."""

from __future__ import annotations

from typing import Any


class NativeWorkload:
    """A workload written in a framework (`TorchWorkload`, `JaxWorkload`) rather than recorded
    on a topos `Tape`: its routes are variants of its own step, and its reference route
    is the step as written. The grading parent learns `framework` and `offered_routes`
    from the preflight child, which alone imports the workload's module."""

    # (`framework`, the framework's module such as `torch`, and `name` are fields of
    # each subclass: unannotated here, so a dataclass subclass orders its own.)

    @property
    def offered_routes(self) -> list[str]:
        """The routes this workload offers by name (and `compile-budget-<fraction>`)."""
        raise NotImplementedError

    @property
    def default_routes(self) -> tuple[str, ...]:
        """What `topos grade` grades of it unless `--routes` says otherwise."""
        raise NotImplementedError

    @property
    def routes(self) -> tuple[str, ...]:
        """The offered routes: what `topos.training.Workload.routes` is for topos's."""
        return tuple(self.offered_routes)

    @property
    def reference_route(self) -> str:
        """The route every other is judged against: the step as written."""
        raise NotImplementedError

    def training(self, route: str, directory: str | None, steps: int) -> Any:
        """Route `route` ready to train for `steps` steps on the data from `directory`:
        `step(t)`, `warm_up()`, `compare_with_reference()` (imports the framework)."""
        raise NotImplementedError

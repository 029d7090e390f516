"""NativeRoute: one variant of a native workload's training step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: What makes a route's loss: called once with the model, the workload's loss and the
#: blocks the workload names, it returns `loss_of(batch)`, the forward computation of
#: one batch's loss (checkpointed, compiled, ... as the route pleases). topos calls
#: `.backward()` on what it returns, then the optimizer's step.
RouteMaker = Callable[[Any, Callable[..., Any], list[Any]], Callable[..., Any]]


@dataclass(frozen=True)
class NativeRoute:
    """A route of a native workload: the function that makes its loss (`RouteMaker`),
    and whether it is promised bit-identical to the reference route (`exact`: the same
    kernels on the same inputs in the same order, as checkpointing recomputes them) or
    only to agree with it within a tolerance (a compiler fuses and reorders)."""

    make: RouteMaker
    exact: bool = True
    #: One line saying what the route does, for the plan's lines in the table.
    description: str = ""

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

#: What makes a JAX route's loss: called once with the workload's loss function
#: `loss(parameters, *batch, **keywords)`, it returns the route's loss of the same
#: signature (checkpointed under a policy, ...); topos differentiates it with
#: `jax.value_and_grad` and jits the step, the optimizer's update within it.
JaxRouteMaker = Callable[[Callable[..., Any]], Callable[..., Any]]


@dataclass(frozen=True)
class NativeRoute:
    """A route of a native workload: the function that makes its loss (`RouteMaker` for
    PyTorch, `JaxRouteMaker` for JAX), and whether it is promised bit-identical to the
    reference route (`exact`: the same kernels on the same inputs in the same order, as
    PyTorch's checkpointing recomputes them) or only to agree with it within a tolerance
    (a compiler fuses and reorders: XLA compiles each JAX route as a program of its own)."""

    make: RouteMaker | JaxRouteMaker
    exact: bool = True
    #: One line saying what the route does, for the plan's lines in the table.
    description: str = ""

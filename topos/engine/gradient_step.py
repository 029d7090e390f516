"""GradientStep: a recording made into a function from parameters and feeds to the loss
and its gradients, what `value_and_grad` gives (JAX's name; PyTorch's `loss.backward()`).

It is the library's two routes behind one call: `"recorded"` differentiates the tape and
lowers a forward-only plan over the loss and its gradients (under `budget`, the remat
route), `"engine"` lowers the retain plan and sweeps it backward. Both answer the same
bits, so the choice is memory and time, never the result.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from topos.errors import GraphError
from topos.graph.parameter_gradients import ParameterGradients
from topos.graph.symbol import Symbol

if TYPE_CHECKING:
    from topos.engine.budget import Budget
    from topos.engine.plan import Feeds, Plan
    from topos.graph.adjoints import Adjoints
    from topos.graph.network import Network
    from topos.graph.parameters import Parameters
    from topos.graph.tape import Tape

ROUTES = ("recorded", "engine")


class GradientStep:
    """`step(parameters, feeds)` gives `(loss, gradients)`: the loss as a NumPy scalar and
    the gradient of each parameter of `wrt`, what `Parameters.step` and every optimizer's
    `step` take. `network` is the sealed recording (its `parameters()` are the initial
    ones), `plan` the lowered plan, `adjoints` the recorded gradients (None for the engine
    route)."""

    def __init__(
        self,
        network: Network,
        plan: Plan,
        loss: Symbol,
        wrt: tuple[Symbol, ...],
        adjoints: Adjoints | None,
    ) -> None:
        self.network = network
        self.plan = plan
        self.loss = loss
        self.wrt = wrt
        self.adjoints = adjoints

    @property
    def route(self) -> str:
        """`"recorded"` (the gradients are nodes of the plan) or `"engine"` (swept)."""
        return "engine" if self.adjoints is None else "recorded"

    def parameters(self) -> Parameters:
        """The recording's initial parameters."""
        return self.network.parameters()

    def __call__(
        self,
        parameters: Parameters,
        feeds: Feeds = (),
        *,
        defaults: bool | Iterable[Symbol] = False,
    ) -> tuple[np.floating, ParameterGradients]:
        """The loss and the gradients at `parameters` on `feeds` (as `Plan.forward` takes
        them: every input fed, unless `defaults` asks for recorded ones on purpose)."""
        run = self.plan.forward(parameters, feeds, defaults=defaults)
        loss = run.of(self.loss).numpy()[()]
        if self.adjoints is not None:
            return loss, run.recorded_gradients(self.adjoints)
        swept = run.backward(self.loss)
        return loss, ParameterGradients(
            self.network.origin, {symbol.index: swept.of(symbol) for symbol in self.wrt}
        )


def value_and_grad(
    tape: Tape,
    loss: Any,
    wrt: Iterable[Any] | None = None,
    *,
    route: str = "recorded",
    budget: Budget | int | float | str | None = None,
) -> GradientStep:
    """Seals `tape` into a GradientStep for the scalar `loss` with respect to `wrt`
    (Symbols or Values; every parameter of the tape when left out).

    `route` is `"recorded"` (the default: the chain rule recorded, a forward-only plan,
    under `budget` the remat posture) or `"engine"` (a retain plan swept backward; no
    budget). The tape is sealed: record everything, second-order terms included, first.
    """
    if route not in ROUTES:
        raise GraphError(f"value_and_grad: route {route!r} is not one of {', '.join(ROUTES)}")
    if budget is not None and route != "recorded":
        raise GraphError("value_and_grad: a budget applies to the recorded route only")
    loss_symbol = getattr(loss, "symbol", loss)
    if not isinstance(loss_symbol, Symbol):
        raise TypeError(f"value_and_grad: the loss is a Symbol or Value, not {type(loss).__name__}")
    if wrt is None:
        wrt_symbols = tuple(
            Symbol(tape.origin, index)
            for index, node in enumerate(tape.nodes)
            if node.operation == "parameter"
        )
    else:
        wrt_symbols = tuple(getattr(each, "symbol", each) for each in wrt)
    adjoints = None
    if route == "recorded":
        adjoints = tape.differentiate(loss_symbol, wrt_symbols)
    network = tape.into_network()
    for symbol in wrt_symbols:
        if network.nodes[network.index(symbol, "value_and_grad")].operation != "parameter":
            raise GraphError(f"value_and_grad: {symbol!r} is not a parameter")
    if adjoints is not None:
        plan = network.entry(adjoints.roots()).lower(budget)
    else:
        plan = network.entry([loss_symbol]).backward().lower()
    return GradientStep(network, plan, loss_symbol, wrt_symbols, adjoints)

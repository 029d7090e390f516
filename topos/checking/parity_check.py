"""check_parity: the float32 routes on one batch, loss and every gradient, bit for bit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from topos.checking.check_findings import ParityCheck
from topos.graph.symbol import Symbol
from topos.graph.tape import Tape
from topos.tensor import Tensor


def check_parity(
    tape: Tape,
    loss: Symbol,
    parameters: Sequence[Symbol],
    feeds: Mapping[Symbol, np.ndarray | Tensor],
) -> ParityCheck:
    """Runs the engine, the recorded and the remat route (at its floor) on an open tape's
    model (float32, as it trains) and compares the loss and each parameter's gradient
    bit for bit."""
    routes = ("engine", "recorded", "remat")
    try:
        adjoints = tape.differentiate(loss, parameters)
        network = tape.into_network()
        start = network.parameters()
        engine_run = network.entry([loss]).backward().lower().forward(start, feeds)
        found = {"engine": engine_run.backward(loss).parameters(start)}
        losses = {"engine": engine_run.of(loss).numpy()}
        for route, budget in (("recorded", None), ("remat", "floor")):
            run = network.entry(adjoints.roots()).lower(budget).forward(start, feeds)
            found[route] = run.recorded_gradients(adjoints)
            losses[route] = run.of(loss).numpy()
    except Exception as error:  # a broken rule may raise; the gradient check says which
        return ParityCheck(routes, {}, False, error=f"{type(error).__name__}: {error}")
    bits = {route: _bits(value) for route, value in losses.items()}
    differing = [
        f"%{symbol.index}"
        for symbol in parameters
        if len({_bits(gradients.of(symbol).numpy()) for gradients in found.values()}) > 1
    ]
    identical = len(set(bits.values())) == 1 and not differing
    return ParityCheck(routes, {r: b[:16] for r, b in bits.items()}, identical, differing)


def _bits(array: np.ndarray) -> str:
    """The array's bytes in hex (shape and dtype are the same on both routes)."""
    return np.ascontiguousarray(array).tobytes().hex()

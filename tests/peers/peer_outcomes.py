"""One recorded expression through a peer: its loss and its parameters' gradients, by
the emitted program and the peer's autodiff, as NumPy arrays (see `tests.support.routes`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tests.support.routes import Build, Outcome, record

PEERS = ("torch", "jax")


def emitter(peer: str, network, loss, parameters: Sequence[int]):
    """The peer's emitter of `network`'s `loss` over `parameters` (node indices)."""
    if peer == "torch":
        from topos.peers.torch_emitter import TorchEmitter

        return TorchEmitter(network, loss, list(parameters))
    from topos.peers.jax_emitter import JaxEmitter

    return JaxEmitter(network, loss, list(parameters))


def peer_outcome(peer: str, build: Build, arrays: Sequence[np.ndarray], seed: int, dtype):
    """The expression's weighted loss and gradients as `peer` computes them."""
    tape, loss, symbols = record(build, arrays, seed, dtype)
    network = tape.into_network()
    indices = [symbol.index for symbol in symbols]
    value, gradients = emitter(peer, network, loss.symbol, indices).loss_and_gradients({})
    return Outcome(np.asarray(value), tuple(gradients[index] for index in indices))


def assert_agrees(peer: Outcome, topos: Outcome, tolerance: float = 1e-12) -> None:
    """Loss and gradients agree to `tolerance`, relative to each array's largest entry."""
    scale = max(1.0, float(np.max(np.abs(topos.loss))))
    np.testing.assert_allclose(peer.loss, topos.loss, rtol=tolerance, atol=tolerance * scale)
    for position, (ours, theirs) in enumerate(zip(topos.gradients, peer.gradients)):
        scale = max(1.0, float(np.max(np.abs(ours), initial=0.0)))
        np.testing.assert_allclose(
            theirs,
            ours,
            rtol=tolerance,
            atol=tolerance * scale,
            err_msg=f"gradient {position}",
        )

"""A peer computes on the workload's `blas_threads`, as a shard of topos's routes does:
PyTorch is told the count, None leaves it as the process set it, and JAX, which takes no
count, says so (`threads` None)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.peers.peer_outcomes import emitter
from tests.support.routes import record
from topos.peers.peer_threads import peer_threads


def test_the_count_is_the_workloads_within_what_the_peer_has():
    assert peer_threads(None, 2) is None
    assert peer_threads(1, 2) == 1
    assert peer_threads(4, 2) == 2
    with pytest.raises(ValueError, match="at least 1"):
        peer_threads(0, 2)


def _network():
    def build(tape, tensors):
        weights = tape.parameter(tensors[0])
        return (weights @ weights).tanh(), [weights.symbol]

    arrays = [np.random.default_rng(0).standard_normal((3, 3))]
    tape, loss, symbols = record(build, arrays, 1, np.float64)
    return tape.into_network(), loss.symbol, [symbol.index for symbol in symbols]


@pytest.fixture
def torch_threads():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    yield torch
    torch.set_num_threads(before)


def test_torch_computes_on_the_workloads_threads(torch_threads):
    from topos.peers.torch_emitter import TorchEmitter

    torch = torch_threads
    torch.set_num_threads(2)
    network, loss, parameters = _network()
    assert TorchEmitter(network, loss, parameters, blas_threads=None).threads is None
    assert torch.get_num_threads() == 2
    capped = TorchEmitter(network, loss, parameters, blas_threads=1)
    assert capped.threads == 1
    assert torch.get_num_threads() == 1


def test_jax_says_it_takes_no_thread_count():
    pytest.importorskip("jax")
    network, loss, parameters = _network()
    assert emitter("jax", network, loss, parameters).threads is None

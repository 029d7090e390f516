"""Random graphs (the exactness tests' generator) emitted to PyTorch and to JAX: in
float64 their losses and gradients agree with topos's to 1e-12, second-order programs
(a penalty on the recorded gradients, so derivative primitives sit in the forward
program the peer differentiates) included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tests.peers.peer_outcomes import PEERS, assert_agrees, peer_outcome
from tests.support.random_graphs import Program, programs
from tests.support.routes import recorded

pytest.importorskip("torch")
pytest.importorskip("jax")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(max_steps=8, leaves=True, second_order=True))
def test_random_graphs_agree_with_both_peers(program: Program):
    arrays = program.arrays()
    topos = recorded(program.build, arrays, program.seed, np.float64)
    if not all(np.all(np.isfinite(g)) for g in topos.gradients) or not np.isfinite(topos.loss):
        return
    for peer in PEERS:
        assert_agrees(peer_outcome(peer, program.build, arrays, program.seed, np.float64), topos)

"""Every primitive is written in both peers, and each rule computes what its kernel does:
every primitive's examples (the expressions its derivative test differentiates), emitted
to PyTorch and to JAX in float64, give topos's loss and gradients to 1e-12."""

from __future__ import annotations

import numpy as np
import pytest

from tests.peers.peer_outcomes import PEERS, assert_agrees, peer_outcome
from tests.support.routes import recorded
from topos.ops import REGISTRY
from topos.ops.emission import declare_emission

pytest.importorskip("torch")
pytest.importorskip("jax")

EXAMPLES = [
    pytest.param(example, id=example.name)
    for primitive in REGISTRY.values()
    for example in primitive.examples
]


@pytest.mark.parametrize("peer", PEERS)
def test_every_primitive_has_an_emission_rule(peer: str):
    missing = [
        name
        for name, primitive in REGISTRY.items()
        if primitive.emission is None or primitive.emission.for_peer(peer) is None
    ]
    assert not missing, f"no {peer} emission rule for: {', '.join(missing)}"


def test_an_emission_is_declared_once():
    with pytest.raises(ValueError, match="declared twice"):
        declare_emission("add", lambda xp, a, b: a + b)


@pytest.mark.parametrize("peer", PEERS)
@pytest.mark.parametrize("example", EXAMPLES)
def test_emitted_example_agrees_in_float64(example, peer: str):
    arrays = example.arrays()
    topos = recorded(example.build, arrays, example.seed, np.float64)
    assert_agrees(peer_outcome(peer, example.build, arrays, example.seed, np.float64), topos)

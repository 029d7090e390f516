"""A wrong emission still fails at step 0, whatever the run's length: the user GRU with
its `tanh` emitted with the wrong sign diverges from topos at step 0, loss and
gradients; emitted right, it agrees."""

from __future__ import annotations

import struct

import pytest

from tests.support.user_models import gru_workload
from topos.ops.emission import Emission
from topos.ops.primitive import lookup
from topos.peers import PeerTraining
from topos.training import Training
from topos_cli.judge.verdict import decide_verdict
from topos_cli.result.repeat import Repeat

pytest.importorskip("torch")

STEPS = 2


def _bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def _verdict():
    dataset = gru_workload.dataset(None)
    ours = Training(gru_workload, "recorded", dataset, STEPS)
    losses = [float(ours.step(step)) for step in range(STEPS)]
    peer = PeerTraining(gru_workload, "torch", dataset, STEPS)
    errors = peer.gradient_errors()
    theirs = [float(peer.step(step)) for step in range(STEPS)]
    facts = {"ready": {"peer": {"framework": "torch", "gradient_errors": errors}}}
    runs = [
        Repeat("recorded", 0, "ok", tuple(map(_bits, losses)), (0.01,) * STEPS),
        Repeat("torch", 0, "ok", tuple(map(_bits, theirs)), (0.01,) * STEPS, facts=facts),
    ]
    return decide_verdict(runs)


def test_a_right_emission_agrees_at_step_0():
    verdict = _verdict()
    (torch,) = verdict.agreements
    assert torch.status == "agrees", torch.describe()
    assert verdict.exit_status == 0


def test_a_sign_wrong_in_an_emission_diverges_at_step_0(monkeypatch):
    tanh = lookup("tanh")
    monkeypatch.setattr(tanh, "emission", Emission(lambda xp, x: -xp.tanh(x)))
    verdict = _verdict()
    (torch,) = verdict.agreements
    assert torch.status == "diverges"
    assert torch.first_divergence_step == 0
    assert torch.gradients_beyond  # its gradients are wrong too, by name
    assert all(not name.startswith("%") for name in torch.gradients_beyond)
    assert verdict.exit_status == 1
    assert "torch diverges from recorded at step 0" in verdict.summary

"""The hand-written PyTorch twin in benchmarks/ (`gpt_twin.py`) as a check of the emitter:
the gpt workload emitted to PyTorch and the twin, from the same parameters on the same
batches with the same AdamW and rates, train the same losses to float32 rounding."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_emitted_gpt_trains_as_its_hand_twin(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import gpt_twin

    from topos.peers import PeerTraining
    from topos.workloads import resolve

    workload = resolve("gpt")
    steps = 3
    training = PeerTraining(workload, "torch", workload.dataset(None), steps)
    named = {name: tensor.numpy() for name, tensor in training.network.parameters().named().items()}
    model = gpt_twin.twin(named)
    optimizer = gpt_twin.optimizer(model)
    tokens, targets = (training.recording.inputs[name].index for name in ("tokens", "targets"))
    for step in range(steps):
        feeds = training.feeds(step)
        rate = float(training.workload.learning_rate(step, steps))
        optimizer.zero_grad()
        twin_loss = gpt_twin.loss(
            model, torch.tensor(feeds[tokens]).long(), torch.tensor(feeds[targets]).long()
        )
        twin_loss.backward()
        for group in optimizer.param_groups:
            group["lr"] = rate
        optimizer.step()
        emitted = float(training.step(step))
        assert emitted == pytest.approx(twin_loss.item(), rel=1e-5), f"step {step}"
    sys.modules.pop("gpt_twin", None)
    assert np.isfinite(emitted)

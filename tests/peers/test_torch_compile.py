"""`torch-compile`: the emitted program through `torch.compile` trains as the eager one,
traced once (a program attribute made on first use once made it trace twice)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.cli import tiny_workloads
from topos.peers import PeerTraining

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(
    shutil.which("cc") is None and shutil.which("gcc") is None,
    reason="torch.compile's CPU code needs a C compiler",
)


def test_compiled_peer_trains_as_the_eager_one_traced_once():
    import torch._dynamo

    steps = 3
    dataset = tiny_workloads.load_dataset(None)
    eager = PeerTraining(tiny_workloads.tiny, "torch", dataset, steps)
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = PeerTraining(tiny_workloads.tiny, "torch-compile", dataset, steps)
    for step in range(steps):
        np.testing.assert_allclose(compiled.step(step), eager.step(step), rtol=1e-6)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1
    assert not torch._dynamo.utils.counters["graph_break"]

"""The hand-written PyTorch twins in benchmarks/ as checks of the emitter: a workload
emitted to PyTorch and its twin (`cifar10_model.torch_twin`, `gpt_twin`), from the same
parameters on the same batches with the same optimizer and rates, both in float64, train
the same losses over a few steps to 1e-12 relative: two programs for one function, whose
convolutions, reductions and optimizers may round differently (they were measured one
unit of the 16th digit apart at most over these three steps, on an AMD EPYC), never
bit-identical by construction."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

STEPS = 3
TOLERANCE = 1e-12


@pytest.fixture
def torch_threads():
    """torch's threads as they were, afterwards (a workload's peer sets them)."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def _emitted(name: str):
    from topos.peers import PeerTraining
    from topos.workloads import resolve

    workload = resolve(name)
    return PeerTraining(workload, "torch", workload.dataset(None), STEPS, dtype=np.float64)


def _train_both(training, model, optimizer, twin_loss) -> list[tuple[float, float]]:
    """Each step's (emitted, twin) losses, the twin fed the emitted program's feeds."""
    losses = []
    for step in range(STEPS):
        feeds = training.feeds(step)
        rate = float(training.workload.learning_rate(step, STEPS))
        optimizer.zero_grad()
        loss = twin_loss(model, feeds)
        loss.backward()
        for group in optimizer.param_groups:
            group["lr"] = rate
        optimizer.step()
        losses.append((float(training.step(step)), loss.item()))
    return losses


def _assert_same_losses(losses) -> None:
    for step, (emitted, twin) in enumerate(losses):
        assert np.isfinite(emitted)
        assert emitted == pytest.approx(twin, rel=TOLERANCE, abs=0), f"step {step}"
    # A program that did not train would repeat step 0's loss.
    assert len({emitted for emitted, _ in losses}) == STEPS


def test_emitted_cifar10_trains_as_its_hand_twin(torch_threads):
    from benchmarks import cifar10_model

    training = _emitted("cifar10")
    arrays = training.network.parameters().arrays()
    model = cifar10_model.torch_twin(torch, [arrays[i] for i in training.parameter_indices])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    images, targets = training.recording.images.index, training.recording.targets.index

    def twin_loss(model, feeds):
        labels = torch.from_numpy(feeds[targets].argmax(axis=1))
        logits = model(torch.from_numpy(feeds[images]))
        return torch.nn.functional.cross_entropy(logits, labels)

    _assert_same_losses(_train_both(training, model, optimizer, twin_loss))


def test_emitted_gpt_trains_as_its_hand_twin(torch_threads):
    from benchmarks import gpt_twin

    training = _emitted("gpt")
    named = {name: tensor.numpy() for name, tensor in training.network.parameters().named().items()}
    model = gpt_twin.twin(named)
    tokens, targets = (training.recording.inputs[name].index for name in ("tokens", "targets"))

    def twin_loss(model, feeds):
        return gpt_twin.loss(
            model, torch.tensor(feeds[tokens]).long(), torch.tensor(feeds[targets]).long()
        )

    _assert_same_losses(_train_both(training, model, gpt_twin.optimizer(model), twin_loss))

"""BatchNorm1d and BatchNorm2d (issue 46): PyTorch's layer in training and evaluation
over several steps, running statistics included; the running statistics are state every
route carries and updates bit for bit alike; finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest

from tests.autodiff.test_derivatives import check_against_finite_differences
from tests.support.cases import Case
from tests.support.routes import ROUTES
from tests.support.user_models import resnet_workload
from topos import BatchNorm1d, BatchNorm2d, Linear, ShapeError, Tape, Tensor, cross_entropy
from topos.ops.example import normal, on_parameters
from topos.training import ConstantRate, Recording, Training, Workload

MOMENTUM = 0.3
RATE = 0.5
STEPS = 4


def _record(tape: Tape, rows: int, dtype=np.float32, training: bool = True) -> Recording:
    """Images [rows, 3, 8, 8] through a batch norm, relu, global average pooling and a
    linear head (weights from a fixed generator, so the twin can copy them)."""
    norm = BatchNorm2d(tape, 3, momentum=MOMENTUM, name="bn")
    norm.train(training)
    weights = np.random.default_rng(5).standard_normal((3, 4)).astype(dtype)
    bias = Tensor.filled([4], 0.1, dtype=dtype)
    head = Linear(tape, Tensor(weights.shape, weights, dtype=dtype), bias, "head")
    images = tape.input(Tensor.filled([rows, 3, 8, 8], 0.0, dtype=dtype))
    targets = tape.input(Tensor.selection([0] * rows, 4, dtype=dtype))
    normed = norm.express(images)
    logits = head.express(normed.relu().mean(axis=(2, 3)))
    loss = cross_entropy(logits, targets)
    return Recording(
        images.symbol,
        targets.symbol,
        logits.symbol,
        loss.symbol,
        tape.named_parameters(),
        outputs={"normed": normed.symbol},
    )


WORKLOAD = Workload(
    name="batch_norm_probe",
    description="a batch norm under a linear head",
    record=_record,
    load_dataset=resnet_workload.load_dataset,
    learning_rate=ConstantRate(RATE),
    batch_size=16,
    shuffle_state=4,
)


def _trained(route: str) -> tuple[Training, list]:
    training = Training(WORKLOAD, route, WORKLOAD.dataset(None), STEPS)
    losses = [training.step(step) for step in range(STEPS)]
    return training, losses


def test_batch_norm_trains_as_torchs_in_training_and_evaluation():
    torch = pytest.importorskip("torch")
    training = Training(WORKLOAD, "recorded", WORKLOAD.dataset(None), STEPS)
    norm = torch.nn.BatchNorm2d(3, momentum=MOMENTUM)
    weights = torch.tensor(np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32))
    weights.requires_grad_(True)
    bias = torch.full((4,), 0.1, requires_grad=True)
    optimizer = torch.optim.SGD([norm.weight, norm.bias, weights, bias], lr=RATE)
    recording = training.recording
    for step in range(STEPS):
        feeds = training.feeds(step)
        images = torch.tensor(feeds[recording.images].numpy())
        targets = torch.tensor(feeds[recording.targets].numpy())
        optimizer.zero_grad()
        logits = norm(images).relu().mean(dim=(2, 3)) @ weights + bias
        loss = torch.nn.functional.cross_entropy(logits, targets)
        loss.backward()
        optimizer.step()
        ours = training.step(step)
        np.testing.assert_allclose(ours, loss.item(), rtol=1e-5, err_msg=f"loss at step {step}")
        state = training.state
        np.testing.assert_allclose(
            state["bn.running_mean"].numpy(), norm.running_mean.numpy(), rtol=1e-5, atol=1e-6
        )
        np.testing.assert_allclose(
            state["bn.running_var"].numpy(), norm.running_var.numpy(), rtol=1e-5, atol=1e-6
        )
    np.testing.assert_allclose(
        training.parameters.named()["bn.weight"].numpy(),
        norm.weight.detach().numpy(),
        rtol=1e-5,
        atol=1e-6,
    )
    # Evaluation: a recording in evaluation form, fed the trained parameters and state.
    tape = Tape()
    evaluation = _record(tape, 16, training=False)
    network = tape.into_network()
    parameters = network.parameters(training.parameters.named())
    images = training.feeds(STEPS)[recording.images]
    feeds = {evaluation.images: images}
    for name, symbol in network.state_symbols().items():
        feeds[symbol] = training.state[name]
    normed = evaluation.outputs["normed"]
    run = network.entry([normed]).lower().forward(parameters, feeds)
    norm.eval()
    with torch.no_grad():
        expected = norm(torch.tensor(images.numpy())).numpy()
    np.testing.assert_allclose(run.of(normed).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_the_running_statistics_are_bit_identical_on_every_route():
    results = {route: _trained(route) for route in ("engine", "recorded", "remat")}
    first, first_losses = results["engine"]
    assert first.state["bn.running_mean"].numpy().any()  # it moved from its zeros
    for route, (training, losses) in results.items():
        assert [loss.tobytes() for loss in losses] == [loss.tobytes() for loss in first_losses]
        for name, tensor in first.state.items():
            assert training.state[name].numpy().tobytes() == tensor.numpy().tobytes(), route


def test_the_state_moves_only_when_a_step_is_taken():
    training = Training(WORKLOAD, "recorded", WORKLOAD.dataset(None), STEPS)
    initial = {name: tensor.numpy().copy() for name, tensor in training.state.items()}
    training.warm_up()  # computes step 0 and throws it away
    for name, array in initial.items():
        np.testing.assert_array_equal(training.state[name].numpy(), array)
    training.step(0)
    assert not np.array_equal(training.state["bn.running_mean"].numpy(), initial["bn.running_mean"])


def _batch_norm_1d(x, weight, bias):
    tape = x.tape
    norm = BatchNorm1d(tape, x.shape[1], momentum=0.2)
    norm._weight, norm._bias = weight, bias  # the case's parameters, not fresh ones
    return norm.express(x)


CASES = [
    Case(
        "batch_norm_2d",
        "rsqrt",
        normal((3, 2, 3, 2)),
        on_parameters(lambda x: BatchNorm2d(x.tape, 2).express(x * 2.0 + 1.0)),
    ),
    Case(
        "batch_norm_1d_affine",
        "rsqrt",
        normal((4, 3, 2), (3,), (3,)),
        on_parameters(_batch_norm_1d),
    ),
    Case(
        "batch_norm_eval",
        "rsqrt",
        normal((4, 3)),
        on_parameters(lambda x: BatchNorm1d(x.tape, 3, affine=False).eval().express(x * x)),
    ),
]


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_batch_norm_matches_finite_differences(case, route):
    check_against_finite_differences(case, route)


def test_bad_inputs_are_named():
    tape = Tape()
    norm = BatchNorm2d(tape, 3, name="bn")
    with pytest.raises(ShapeError, match=r"BatchNorm2d\(3\): input \[2, 4, 5, 5\] must be"):
        norm.express(tape.input(Tensor.filled([2, 4, 5, 5], 0.0)))
    with pytest.raises(ShapeError, match="1 value per channel"):
        BatchNorm1d(tape, 3).express(tape.input(Tensor.filled([1, 3], 0.0)))
    with pytest.raises(ValueError, match="momentum=None"):
        BatchNorm2d(tape, 3, momentum=None)
    images = tape.input(Tensor.filled([2, 3, 5, 5], 0.0))
    norm.express(images)
    with pytest.raises(ValueError, match="expressed once a recording"):
        norm.express(images)


@pytest.mark.parametrize("peer", ["torch", "jax"])
def test_the_peers_carry_the_running_statistics_as_topos_does(peer):
    pytest.importorskip(peer)
    from topos.peers.peer_training import PeerTraining

    ours, losses = _trained("recorded")
    theirs = PeerTraining(WORKLOAD, peer, WORKLOAD.dataset(None), STEPS)
    peer_losses = [theirs.step(step) for step in range(STEPS)]
    np.testing.assert_allclose(peer_losses, losses, rtol=1e-5)
    for name, symbol in theirs.network.state_symbols().items():
        np.testing.assert_allclose(
            theirs.state[symbol.index], ours.state[name].numpy(), rtol=1e-5, atol=1e-6
        )


def test_sharded_steps_carry_the_first_shards_statistics_on_threads_and_in_processes():
    from dataclasses import replace

    outcomes = []
    for processes in (False, True):
        workload = replace(WORKLOAD, shards=2, shard_processes=processes)
        training = Training(workload, "recorded", workload.dataset(None), 2)
        try:
            losses = [training.step(step) for step in range(2)]
        finally:
            training.program.close()
        outcomes.append((losses, {k: v.numpy().tobytes() for k, v in training.state.items()}))
    assert outcomes[0] == outcomes[1]

"""The `gpt` workload: its exact parameters and initialisation, its batches, its gradients
against an independent NumPy implementation, and both routes training bit for bit."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.support.gpt_reference import loss_and_gradients
from topos import Tape, init
from topos.datasets import DataError
from topos.datasets.text import load_text
from topos.training import Training
from topos.workloads import gpt, resolve
from topos.workloads.gpt_probe import GPTProbe

V = gpt.SYNTHETIC_VOCABULARY

#: (name, shape, seed of its init.normal(seed, 0.02) draw, or the constant it starts at)
EXPECTED = [
    ("token_embedding", (V, 64), 31),
    ("position_embedding", (64, 64), 32),
]
for _block in range(2):
    _prefix = f"blocks.{_block}"
    _seed = 33 + 4 * _block
    EXPECTED += [
        (f"{_prefix}.ln1.weight", (64,), 1.0),
        (f"{_prefix}.ln1.bias", (64,), 0.0),
        (f"{_prefix}.attention.qkv.weight", (64, 192), _seed),
        (f"{_prefix}.attention.qkv.bias", (192,), 0.0),
        (f"{_prefix}.attention.projection.weight", (64, 64), _seed + 1),
        (f"{_prefix}.attention.projection.bias", (64,), 0.0),
        (f"{_prefix}.ln2.weight", (64,), 1.0),
        (f"{_prefix}.ln2.bias", (64,), 0.0),
        (f"{_prefix}.mlp.expand.weight", (64, 256), _seed + 2),
        (f"{_prefix}.mlp.expand.bias", (256,), 0.0),
        (f"{_prefix}.mlp.project.weight", (256, 64), _seed + 3),
        (f"{_prefix}.mlp.project.bias", (64,), 0.0),
    ]
EXPECTED += [("ln_f.weight", (64,), 1.0), ("ln_f.bias", (64,), 0.0), ("head.weight", (64, V), 41)]


def recorded(rows: int = 2, dtype=np.float32):
    tape = Tape(dtype=dtype)
    recording = gpt.record(tape, rows, dtype=dtype)
    return recording, tape.into_network()


def test_the_parameters_are_named_shaped_and_drawn_as_specified():
    recording, network = recorded()
    named = recording.named_parameters()
    assert list(named) == [name for name, _, _ in EXPECTED]
    assert list(network.names) == list(named)
    payloads = network.parameters().named()
    for name, shape, start in EXPECTED:
        payload = payloads[name]
        assert payload.shape == shape, name
        assert network.name_of(named[name]) == name
        if isinstance(start, int):
            assert payload == init.normal(start, 0.02)(shape), name
        else:
            assert np.all(payload.numpy() == np.float32(start)), name


def test_float64_widens_the_same_draws():
    _, network = recorded(dtype=np.float64)
    wide = network.parameters().named()
    narrow = recorded()[1].parameters().named()
    for name in wide:
        assert wide[name].dtype == np.float64
        np.testing.assert_array_equal(wide[name].numpy(), narrow[name].numpy().astype(np.float64))


def test_the_vocabulary_follows_the_data(tmp_path):
    assert len(load_text(None).vocabulary) == V
    path = tmp_path / "input.txt"
    path.write_text("the quick brown fox jumps over the lazy dog\n" * 100, encoding="utf-8")
    dataset = gpt.workload.dataset(str(path))
    fitted = gpt.workload.fitted(dataset)
    tape = Tape()
    fitted.record(tape, 2)
    network = tape.into_network()
    assert network.parameters().named()["head.weight"].shape == (64, len(dataset.vocabulary))


def test_a_text_too_short_for_a_batch_is_refused(tmp_path):
    path = tmp_path / "input.txt"
    path.write_text("abc" * 700, encoding="utf-8")
    with pytest.raises(DataError, match=r"too short: 2100 characters.*\(2080 characters\)"):
        gpt.workload.dataset(str(path))


def test_a_batch_is_32_windows_whose_targets_follow_their_tokens():
    dataset = gpt.workload.dataset(None)
    training = Training(gpt.workload, "recorded", dataset, 10)
    offsets = training.batch_indices(3)
    assert offsets.shape == (32,)
    feeds = training.feeds(3)
    inputs = training.recording.inputs
    tokens, targets = feeds[inputs["tokens"]].numpy(), feeds[inputs["targets"]].numpy()
    assert tokens.shape == targets.shape == (32, 64)
    ids = dataset.train.ids
    for row, offset in enumerate(offsets[:4]):
        np.testing.assert_array_equal(tokens[row], ids[offset : offset + 64])
        np.testing.assert_array_equal(targets[row], ids[offset + 1 : offset + 65])


def test_gradients_at_initialisation_match_an_independent_implementation():
    workload = dataclasses.replace(gpt.workload, batch_size=4, shards=1)
    dataset = workload.dataset(None)
    training = Training(workload, "engine", dataset, 1)
    feeds = training.feeds(0)
    inputs = training.recording.inputs
    named = {name: tensor.numpy() for name, tensor in training.parameters.named().items()}
    loss, expected = loss_and_gradients(
        named, feeds[inputs["tokens"]].numpy(), feeds[inputs["targets"]].numpy()
    )
    found_loss, gradients = training.compute(0)
    np.testing.assert_allclose(found_loss, loss, rtol=1e-5)
    for name, symbol in training.recording.named_parameters().items():
        found = gradients.of(symbol).numpy()
        error = np.linalg.norm(found - expected[name]) / np.linalg.norm(expected[name])
        assert error < 1e-4, (name, error)


def test_both_routes_train_bit_for_bit():
    dataset = gpt.workload.dataset(None)
    trajectories = {}
    for route in ("engine", "recorded"):
        training = Training(gpt.workload, route, dataset, 3)
        losses = [training.step(step) for step in range(3)]
        trajectories[route] = (
            [loss.tobytes() for loss in losses],
            {
                name: tensor.numpy().tobytes()
                for name, tensor in training.parameters.named().items()
            },
        )
    assert trajectories["engine"] == trajectories["recorded"]
    assert np.frombuffer(trajectories["engine"][0][0], np.float32)[0] == pytest.approx(
        np.log(V), abs=0.05
    )


def test_a_probe_measures_validation_loss_and_samples():
    dataset = gpt.workload.dataset(None)
    named = recorded()[1].parameters().named()
    loss = GPTProbe(V, 8).validation_loss(named, dataset.test, windows=16)
    assert loss == pytest.approx(np.log(V), abs=0.05)
    sampled = GPTProbe(V, 1).sample(named, dataset.test.ids[:5], 10, seed=3)
    assert sampled.shape == (10,) and sampled.max() < V
    again = GPTProbe(V, 1).sample(named, dataset.test.ids[:5], 10, seed=3)
    np.testing.assert_array_equal(sampled, again)


def test_the_workload_is_built_in():
    assert resolve("gpt") is gpt.workload
    assert gpt.workload.shards == 2 and gpt.workload.batch_size == 32

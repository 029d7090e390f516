"""The `llama` workload: its exact parameters and initialisation, its data and batches
(gpt's), the three routes training bit for bit, and `topos check` passing."""

from __future__ import annotations

import io

import numpy as np
import pytest

from topos import Tape, init
from topos.training import ConstantRate, Training
from topos.workloads import gpt, llama, resolve

V = gpt.SYNTHETIC_VOCABULARY


def expected_parameters() -> list[tuple[str, tuple[int, ...], float | int]]:
    """(name, shape, the seed of its init.normal(seed, 0.02) draw or its constant), in
    recording order; the seeds in the issue's order: tok_embeddings, per layer wq, wk,
    wv, wo, w1, w3, w2, then output."""
    expected: list = [("tok_embeddings.weight", (V, 64), 51)]
    for layer in range(2):
        prefix, seed = f"layers.{layer}", 52 + 7 * layer
        expected += [
            (f"{prefix}.attention_norm.weight", (64,), 1.0),
            (f"{prefix}.attention.wq.weight", (64, 64), seed),
            (f"{prefix}.attention.wk.weight", (64, 64), seed + 1),
            (f"{prefix}.attention.wv.weight", (64, 64), seed + 2),
            (f"{prefix}.attention.wo.weight", (64, 64), seed + 3),
            (f"{prefix}.ffn_norm.weight", (64,), 1.0),
            (f"{prefix}.feed_forward.w1.weight", (64, 172), seed + 4),
            (f"{prefix}.feed_forward.w3.weight", (64, 172), seed + 5),
            (f"{prefix}.feed_forward.w2.weight", (172, 64), seed + 6),
        ]
    return [*expected, ("norm.weight", (64,), 1.0), ("output.weight", (64, V), 66)]


def test_the_parameters_are_named_shaped_and_drawn_as_specified():
    tape = Tape()
    recording = llama.record(tape, 2)
    network = tape.into_network()
    named = recording.named_parameters()
    expected = expected_parameters()
    assert list(named) == [name for name, _, _ in expected]
    payloads = network.parameters().named()
    for name, shape, start in expected:
        assert payloads[name].shape == shape, name
        if isinstance(start, int):
            assert payloads[name] == init.normal(start, 0.02)(shape), name
        else:
            assert np.all(payloads[name].numpy() == np.float32(start)), name


def test_the_workload_is_built_in_with_gpts_data_and_the_issues_settings():
    workload = resolve("llama")
    assert workload is llama.workload
    assert (workload.batch_size, workload.shards, workload.shuffle_state) == (32, 2, 7)
    assert workload.learning_rate == ConstantRate(1e-3)
    assert workload.load_dataset is gpt.workload.load_dataset
    optimizer = workload.optimizer()
    assert (optimizer.learning_rate, optimizer.beta1, optimizer.beta2) == (1e-3, 0.9, 0.99)
    assert (optimizer.epsilon, optimizer.weight_decay) == (1e-8, 0.1)
    training = Training(workload, "recorded", workload.dataset(None), 4)
    reference = Training(gpt.workload, "recorded", gpt.workload.dataset(None), 4)
    np.testing.assert_array_equal(training.batch_indices(3), reference.batch_indices(3))


def test_the_three_routes_train_bit_for_bit():
    workload = resolve("llama")
    dataset = workload.dataset(None)
    trajectories = {}
    # Two steps: the second's loss and both's parameters carry the first's update and
    # Adam's state from it; a third step proved nothing more (a third of the steps' time).
    for route in ("engine", "recorded", "remat"):
        training = Training(workload, route, dataset, 2)
        losses = [training.step(step).tobytes() for step in range(2)]
        parameters = {name: t.numpy().tobytes() for name, t in training.parameters.named().items()}
        trajectories[route] = (losses, parameters)
    assert trajectories["engine"] == trajectories["recorded"] == trajectories["remat"]
    first = np.frombuffer(trajectories["engine"][0][0], np.float32)[0]
    assert first == pytest.approx(np.log(V), abs=0.1)


def test_topos_check_passes():
    from topos_cli.commands.check import CheckOptions, run_check

    output = io.StringIO()
    options = CheckOptions(workload="llama", rows=2, directions=1)
    status = run_check(options, stdout=output, stderr=io.StringIO())
    assert status == 0, output.getvalue()
    assert "layers.1.feed_forward.w2.weight" in output.getvalue()
    assert "gradients right" in output.getvalue()

"""Models of kinds the guides do not show, written from them alone as a new user would
(issue 48; `tests/native/user_models/`): a PyTorch LSTM tagger with dropout and LayerNorm,
a JAX MLP-mixer with dropout under `jax.checkpoint` policies. What must hold for them:
checkpointing trains bit-identically to eager and holds fewer step tensors; dropout
recomputed without its RNG state is named as the cause where it parts; graded by the
file's path, the table says "bit-identical" of every route with eager's bits even when
another parts; the JAX mixer's named policy agrees with jit and holds less."""

from __future__ import annotations

import numpy as np
import pytest

from tests.cli.grading import ROOT, graded

USER_MODELS = ROOT / "tests" / "native" / "user_models"


def _bits(training, steps: int) -> list[int]:
    return [int(training.step(step).view(np.uint32)) for step in range(steps)]


def test_the_lstm_taggers_checkpoints_train_as_eager_and_hold_less():
    pytest.importorskip("torch")
    from tests.native.user_models.lstm_tagger import with_lstm, workload
    from topos.native.torch_training import TorchTraining

    eager = TorchTraining(workload, "eager", None, 3)
    reference, eager_tensors = _bits(eager, 3), eager.step_tensors().peak_bytes
    assert len(set(reference)) == 3  # it trains: a loss that never moved would prove nothing
    for tagger, route in [(workload, "checkpoint"), (with_lstm, "checkpoint")]:
        training = TorchTraining(tagger, route, None, 3)
        comparison = training.compare_with_reference()
        assert comparison.differing_gradients == [] and comparison.rng_matches_reference
        assert _bits(training, 3) == reference, (tagger.name, route)
        assert 0 < training.step_tensors().peak_bytes < eager_tensors, (tagger.name, route)
    # Its LSTM's dropout and the blocks' recomputed without the RNG state: new masks.
    training = TorchTraining(workload, "checkpoint-unpreserved-rng", None, 3)
    comparison = training.compare_with_reference()
    assert comparison.loss_identical and comparison.rng_matches_reference is False
    assert "blocks.0.net.0.weight" in comparison.differing_gradients


def test_the_lstm_tagger_graded_by_its_path_says_who_has_eagers_bits(tmp_path):
    pytest.importorskip("torch")
    completed, result = graded(
        str(USER_MODELS / "lstm_tagger.py"),
        tmp_path,
        "--routes",
        "eager,checkpoint,checkpoint-unpreserved-rng",
        "--warmup",
        "0",
        steps=3,
        name="tagger.json",
        timeout=300,
        PYTHONPATH=str(ROOT),
    )
    assert completed.returncode == 3, completed.stdout + completed.stderr
    rows: dict[str, str] = {}
    for line in completed.stdout.splitlines():
        if line.strip():
            rows.setdefault(line.split()[0], line)  # the table's row, not a later warning
    assert rows["checkpoint"].rstrip().endswith("bit-identical"), rows["checkpoint"]
    assert rows["checkpoint-unpreserved-rng"].rstrip().endswith("parts at step 1")
    summary = result["verdict"]["summary"]
    assert "checkpoint-unpreserved-rng parts from eager: its random state after step 0" in summary


def test_the_mixers_named_policy_agrees_with_jit_and_holds_less():
    pytest.importorskip("jax")
    from tests.native.user_models.jax_mixer import workload
    from topos.native.jax_training import JaxTraining

    jit = JaxTraining(workload, "jit", None, 3)
    reference = [float(jit.step(step)) for step in range(3)]
    assert len(set(reference)) == 3
    # Only the channel MLP's named hidden values kept (the frontier measured the other
    # policies at jit's own bytes: XLA on CPU merges the recomputation back, as the JAX
    # guide says; compiling them too would triple this test's time).
    training = JaxTraining(workload, "checkpoint-names:hidden", None, 3)
    comparison = training.compare_with_reference()
    # The same key in every route: dropout's masks agree, so do the gradients.
    assert max(comparison.gradient_errors.values()) < 1e-5, comparison
    losses = [float(training.step(step)) for step in range(3)]
    np.testing.assert_allclose(losses, reference, rtol=1e-5)
    assert 0 < training.step_tensors().peak_bytes < jit.step_tensors().peak_bytes

"""`topos grade --routes recorded,torch,jax` on mnist for a few steps: every route ok, and
the peers agree with topos to float32 rounding, their gradients at step 0 too."""

from __future__ import annotations

import pytest

from tests.cli.grading import graded

pytest.importorskip("torch")
pytest.importorskip("jax")


def test_mnist_graded_against_both_peers(tmp_path):
    completed, data = graded(
        "mnist",
        tmp_path,
        "--routes",
        "recorded,torch,jax",
        "--warmup",
        "0",
        steps=3,
        name="peers.json",
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert {run["route"]: run["status"] for run in data["repeats"]} == {
        "recorded": "ok",
        "torch": "ok",
        "jax": "ok",
    }
    peers = {peer["route"]: peer for peer in data["verdict"]["peers"]}
    assert set(peers) == {"torch", "jax"}
    for peer in peers.values():
        assert peer["status"] == "agrees"
        assert peer["steps"] == 3
        assert peer["largest_relative_loss_difference"] < 1e-5
        assert max(peer["gradient_errors"].values()) < 1e-4
    environments = {
        run["route"]: run["facts"]["ready"]["numerics"]["environment"] for run in data["repeats"]
    }
    # topos's routes at the grader's mmap threshold, the peers at glibc's own.
    assert environments["recorded"]["MALLOC_MMAP_THRESHOLD_"] == "65536"
    assert environments["torch"]["MALLOC_MMAP_THRESHOLD_"] is None
    assert environments["jax"]["MALLOC_MMAP_THRESHOLD_"] is None
    assert "agrees: step 0 to" in completed.stdout
    assert "bit-identical" not in completed.stdout

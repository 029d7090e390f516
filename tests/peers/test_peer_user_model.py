"""`topos grade` of a user's model with a torch peer: it agrees at step 0 and along the run
(judged against float32's own drift, from float64 runs made before the peer's worker was
ready), and the JSON names each gradient by the parameter's name, not its node."""

from __future__ import annotations

import json

import pytest

from tests.cli.grading import topos

pytest.importorskip("torch")

STEPS = 4


def test_a_user_resnet_agrees_with_its_torch_peer_by_parameter_name(tmp_path):
    result = tmp_path / "peer.json"
    completed = topos(
        "grade",
        "--workload",
        "tests.peers.listed_parameters:resnet_workload",
        "--routes",
        "recorded,torch",
        "--steps",
        str(STEPS),
        "--warmup",
        "0",
        "--json",
        str(result),
        cwd=tmp_path,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    data = json.loads(result.read_text())
    (peer,) = data["verdict"]["peers"]
    assert peer["status"] == "agrees"
    assert peer["trajectory"] == "judged" and peer["judged_through_step"] == STEPS - 1
    assert peer["float64_relative_loss_difference"] < 1e-12  # the same program in float64
    names = list(peer["gradient_errors"])
    assert names[:3] == ["stem.weight", "block.conv1.weight", "block.conv2.weight"]
    assert not any(name.startswith("%") for name in names)
    assert max(peer["gradient_errors"].values()) < 1e-4
    assert f"steps 1-{STEPS - 1} within 10x float32's own drift" in peer["description"]
    torch_run = next(run for run in data["repeats"] if run["route"] == "torch")
    float64 = torch_run["facts"]["ready"]["peer"]["float64"]
    assert len(float64["topos_losses"]) == len(float64["peer_losses"]) == STEPS

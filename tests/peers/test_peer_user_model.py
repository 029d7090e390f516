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


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_a_gradient_of_about_zero_is_judged_on_the_models_scale(framework):
    # A convolution's bias feeding a batch norm: its true gradient is zero, and what each
    # framework computes for it is rounding noise, as far from the other's as it is large.
    # Judged against its own size a correct peer "diverged" (1.7 against 1e-4: exit 1);
    # on the model's scale it is the rounding it is.
    pytest.importorskip(framework)
    import numpy as np

    from tests.peers.conv_bias_model import workload
    from topos.peers import PeerTraining
    from topos.training import RouteProgram

    peer = PeerTraining(workload, framework, workload.dataset(None), 2)
    errors = peer.gradient_errors()
    assert set(errors) >= {"conv.weight", "conv.bias", "bn.weight", "head.weight"}
    assert max(errors.values()) < 1e-4, errors
    # The bias's gradient is tiny beside the model's: the per-parameter measure was noise.
    program = RouteProgram(workload, "recorded")
    try:
        feeds = workload.feeds(peer.dataset.train, peer.order.indices(0), program.recording)
        _, gradients = program.compute(program.network.parameters(), feeds)
        norms = {
            name: float(np.linalg.norm(gradients.of(symbol).numpy()))
            for name, symbol in program.recording.named_parameters(program.network.names).items()
        }
    finally:
        program.close()
        program.release()
    assert norms["conv.bias"] < 1e-5 * max(norms.values())

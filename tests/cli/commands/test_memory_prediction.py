"""The memory prediction holds for workloads nobody tuned it on: a generated family of
MLPs and small convnets, SGD and Adam, one and two shards, graded in real workers."""

from __future__ import annotations

import pytest

from tests.cli.grading import succeeded

#: Which generated workloads are graded (see tests/cli/generated_workloads.py): MLPs of
#: one to three hidden layers and convnets of one and two stages, SGD and Adam, 1 and 2
#: shards, batches of 64 to 256.
GENERATED = ["mlp_0", "mlp_1", "mlp_3", "mlp_6", "convnet_1", "convnet_4"]
#: The same in two shards, the second in a forked process: its private memory counted.
GENERATED += ["processes_mlp_3", "processes_convnet_4"]

TOLERANCE, FLOOR = 0.05, 256 * 1024


@pytest.mark.parametrize("name", GENERATED)
def test_the_predicted_training_delta_is_within_target(name, tmp_path):
    _, result = succeeded(
        "grade",
        "--workload",
        f"tests.cli.generated_workloads:{name}",
        "--steps",
        "4",
        cwd=tmp_path,
        timeout=120.0,
    )
    for prediction in result["memory_prediction"]:
        measured = prediction["measured_training_delta_bytes"]
        predicted = prediction["predicted_training_bytes"]
        assert sum(prediction["parts"].values()) == predicted
        allowed = max(TOLERANCE * measured, FLOOR)
        assert abs(measured - predicted) <= allowed, (name, prediction)
        assert prediction["within_tolerance"] is True

"""A PyTorch step's routes in one process: a route of the user's own, a missing framework
said in one line, and the grading parent never importing the framework."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.cli.grading import ROOT, environment
from topos.names import missing_native_route

torch = pytest.importorskip("torch")


def user_workload():
    """A user's two-layer regression, with a route of their own: the whole model under
    one checkpoint, written by hand."""
    from torch import nn
    from torch.utils.checkpoint import checkpoint

    from topos.native import NativeRoute, TorchWorkload

    def whole_model_checkpointed(model, loss, blocks):
        return lambda inputs, targets: loss(
            lambda x: checkpoint(model, x, use_reentrant=False), inputs, targets
        )

    def data(directory):
        generator = torch.Generator().manual_seed(3)
        inputs = torch.randn(64, 8, generator=generator)
        return inputs, inputs.sum(dim=1, keepdim=True).sin()

    return TorchWorkload(
        name="regression",
        model=lambda: nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)),
        loss=lambda model, inputs, targets: nn.functional.mse_loss(model(inputs), targets),
        optimizer=lambda parameters: torch.optim.SGD(parameters, lr=0.1, momentum=0.9),
        data=data,
        batch_size=8,
        blocks=lambda model: [model[0]],
        extra_routes={"by-hand": NativeRoute(whole_model_checkpointed, exact=True)},
    )


def test_a_route_of_the_users_own_trains_bit_identically_to_eager():
    from topos.native.torch_training import TorchTraining

    workload = user_workload()
    assert "by-hand" in workload.offered_routes
    trained = {}
    for route in ("eager", "by-hand", "checkpoint"):
        training = TorchTraining(workload, route, None, 4)
        comparison = training.compare_with_reference()
        assert comparison.differing_gradients == [] and comparison.rng_matches_reference
        trained[route] = [int(training.step(step).view(np.uint32)) for step in range(4)]
    assert trained["by-hand"] == trained["eager"] == trained["checkpoint"]
    # The batches move on: a loss that never changed would prove nothing.
    assert len(set(trained["eager"])) == 4


def test_a_missing_framework_is_one_line():
    message = missing_native_route("eager", "no_such_framework", ["eager"])
    assert message == (
        "route 'eager' needs no_such_framework, which is not installed: "
        "pip install 'topos[no_such_framework]'"
    )


PARENT = """
import json, sys
from topos_cli.harness.grade_preparation import GradeOptions, fit_to_workload, prepare
from topos_cli.harness.workload_preflight_run import preflight_workload
options = GradeOptions(workload="torch_transformer:workload", routes=("eager", "checkpoint"),
                       json_path="-")
prepare(options)
told = preflight_workload(options.workload, None)
fit_to_workload(options, told.framework, told.routes, told.default_routes)
print(json.dumps([told.framework, list(told.routes), "torch" in sys.modules]))
"""


def test_the_grading_parent_never_imports_the_framework():
    examples = str(ROOT / "examples")
    completed = subprocess.run(
        [sys.executable, "-c", PARENT],
        cwd=ROOT,
        env=environment(PYTHONPATH=f"{ROOT}:{examples}"),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    framework, routes, imported = json.loads(completed.stdout.splitlines()[-1])
    assert framework == "torch" and "checkpoint" in routes
    assert imported is False

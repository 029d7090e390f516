"""The check passes on a model touching most primitives, and names the primitive whose
derivative rule is broken on purpose — a built-in one or a user's own."""

from __future__ import annotations

import numpy as np
import pytest

from tests.checking.checked_workloads import break_rule, many, register_softplus
from topos import Tape
from topos.checking import check_gradients
from topos.datasets import shuffle
from topos.ops import REGISTRY
from topos.training.recording_dtype import record_in_dtype


def check(workload=many, routes=("engine", "recorded"), directions=2):
    """The float64 check of `workload` on its first batch."""
    dataset = workload.load_dataset(None)
    order = np.arange(len(dataset.train), dtype=np.int64)
    shuffle(order, workload.shuffle_state)
    indices = order[: workload.batch_size]
    tape, recording = record_in_dtype(workload, workload.batch_size, np.float64)
    feeds = {
        recording.images: dataset.train.images(indices).astype(np.float64),
        recording.targets: dataset.train.one_hot(indices).astype(np.float64),
    }
    return check_gradients(
        tape, recording.loss, recording.parameters, feeds, routes=routes, directions=directions
    )


def test_every_gradient_of_an_unbroken_model_is_right():
    report = check()
    assert report.gradients_right, report.verdict()
    assert report.rules == [] and report.rules_checked == 0
    assert all(max(c.errors.values()) < 1e-7 for c in report.parameters)


@pytest.mark.parametrize(
    "operation",
    [
        "mul",
        "matmul",
        "exp",
        "tanh",
        "reshape",
        "permute",
        "max_pool",
        "lane_max",
        "convolution",
        "logsumexp",
        "broadcast",
        "user_softplus",  # registered by the test's own workload: a user's primitive
    ],
)
def test_a_broken_rule_is_named(monkeypatch, operation):
    register_softplus()
    monkeypatch.setattr(REGISTRY[operation], "derive", break_rule(operation))
    report = check(directions=1)
    assert not report.gradients_right
    assert report.culprit is not None, report.verdict()
    assert report.culprit.operation == operation
    assert {failure.operation for failure in report.rules} == {operation}
    assert report.culprit.source.endswith(".py:" + report.culprit.source.split(":")[-1])
    assert "checked_workloads.py" in report.culprit.source
    assert operation in report.verdict()


def test_a_rule_that_raises_is_named(monkeypatch):
    # The inverse permutation forgotten: the gradient comes back in the wrong shape.
    def derive(algebra, inputs, output, gradient, needs, axes):
        return (algebra.permute(gradient, axes=axes),)

    monkeypatch.setattr(REGISTRY["permute"], "derive", derive)
    report = check(directions=1)
    # Both routes hand the kernel's weights a gradient of the wrong shape.
    assert set(report.route_errors) == {"engine", "recorded"}
    assert "shape" in report.route_errors["engine"]
    assert report.culprit is not None and report.culprit.operation == "permute"
    assert "gradient of shape" in report.culprit.message


def test_one_route_alone_is_checked_alone():
    report = check(routes=("recorded",), directions=1)
    assert report.gradients_right
    assert all(set(c.errors) == {"recorded"} for c in report.parameters)


def test_the_tape_must_record_in_float64():
    tape = Tape()
    with pytest.raises(TypeError, match="float64"):
        check_gradients(tape, None, [], {})

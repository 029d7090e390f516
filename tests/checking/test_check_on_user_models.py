"""The check on models of one's own: it accuses a rule only with evidence.

A GRU's recurrent weights have gradients 1e-5 the size of the loss: one central
difference at the default step is roundoff there, and the check used to call their
correct gradients wrong (seeds 0, 2 and 3 of `user_gru`). Ridders' extrapolation over a
ladder of steps, with its own error, tells roundoff from a wrong rule; a slightly wrong
rule on the same model is still caught and named.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.checking.checked_workloads import break_rule
from tests.support.user_models import gru_workload, resnet_workload
from topos.checking import check_gradients
from topos.checking.directional_difference import extrapolated_slope
from topos.checking.gradient_check import ACCUSE
from topos.ops import REGISTRY
from topos.tensor import Tensor
from topos.training.recording_dtype import record_in_dtype


def check(workload, seed: int, directions: int = 3):
    """The float64 check of `workload` on the first rows of its first batch, as
    `topos check` makes it."""
    dataset = workload.load_dataset(None)
    workload = workload.fitted(dataset)
    order = workload.batches(dataset.train, workload.batch_size, workload.shuffle_state)
    indices = order.indices(0)
    tape, recording = record_in_dtype(workload, len(indices), np.float64)
    feeds = {
        symbol: feed.numpy().astype(np.float64) if isinstance(feed, Tensor) else feed
        for symbol, feed in workload.feeds(dataset.train, indices, recording).items()
    }
    return check_gradients(
        tape,
        recording.loss,
        recording.parameters,
        feeds,
        routes=("engine", "recorded"),
        directions=directions,
        seed=seed,
    )


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_grus_correct_gradients_are_never_called_wrong(seed):
    report = check(gru_workload, seed)
    assert report.gradients_right, report.verdict()
    assert [c.label for c in report.parameters if c.status == "FAIL"] == []
    assert report.verdict().startswith(("gradients right", "no wrong gradient found"))


def test_a_normalised_convnet_checks_right():
    report = check(resnet_workload, 1)
    assert report.gradients_right and report.undecided == [], report.verdict()


def test_a_slightly_wrong_rule_in_the_gru_is_still_named(monkeypatch):
    original = REGISTRY["sigmoid"].derive

    def derive(algebra, inputs, output, gradient, needs, **attributes):  # 0.1% too large
        parts = list(original(algebra, inputs, output, gradient, needs, **attributes))
        parts[0] = algebra.mul(parts[0], algebra.constant(1.001, algebra.shape(parts[0])))
        return parts

    monkeypatch.setattr(REGISTRY["sigmoid"], "derive", derive)
    report = check(gru_workload, 0, directions=1)
    assert not report.gradients_right, report.verdict()
    assert report.culprit is not None and report.culprit.operation == "sigmoid"
    assert "user_models.py:" in report.culprit.source


def test_a_wrong_factor_in_the_grus_matmul_is_named(monkeypatch):
    monkeypatch.setattr(REGISTRY["matmul"], "derive", break_rule("matmul"))
    report = check(gru_workload, 2, directions=1)
    assert not report.gradients_right
    assert report.culprit is not None and report.culprit.operation == "matmul"


def _function(noise: float):
    """phi(t) = exp(sin(3t)) * 2 + 50 (a large loss beside a small slope), with
    deterministic roundoff-like noise of relative size `noise`; its slope at 0 is 6."""

    def evaluate(t: float):
        value = 2.0 * math.exp(math.sin(3.0 * t)) + 50.0
        jitter = math.sin(t * 1.234567e9) * noise * value
        return value + jitter, None

    return evaluate


@pytest.mark.parametrize("noise", [0.0, 1e-15, 1e-13])
def test_the_extrapolations_own_error_covers_its_actual_error(noise):
    evaluate = _function(noise)
    floor = max(noise, 16 * np.finfo(np.float64).eps) * 52.0  # as the check sets it
    ladder = extrapolated_slope(evaluate, 1e-7, evaluate(0.0), noise=floor)
    assert ladder.value is not None and ladder.steps >= 3
    # Ridders' error is an estimate: the check accuses only beyond ACCUSE times it
    assert abs(ladder.value - 6.0) <= ACCUSE * ladder.error
    assert ladder.error < 1e-4  # and it is small: evidence enough to accuse a 0.1% slip
    assert abs(ladder.value * 1.001 - ladder.value) > ACCUSE * ladder.error


def test_roundoff_coincidences_never_claim_a_zero_error():
    # a function quantised so coarsely that the small steps' differences agree exactly
    def evaluate(t: float):
        return round((50.0 + 1e-3 * t) * 1e9) / 1e9, None

    ladder = extrapolated_slope(evaluate, 1e-9, evaluate(0.0), noise=1e-9)
    assert ladder.error > 0.0
    assert abs(ladder.value - 1e-3) <= ladder.error

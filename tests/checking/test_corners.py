"""Corners are handled honestly: one-sided differences beside them, skipped across two,
and never a false alarm at an exact tie."""

from __future__ import annotations

import numpy as np

from tests.checking.test_rule_culprits import check
from topos import Shape, Tape, Tensor, init, max_pool
from topos.checking import check_gradients
from topos.checking.directional_difference import slope


def test_beside_a_corner_the_difference_is_one_sided():
    # |t| has slope +1 on the piece t >= 0 the base point's signature (t >= 0) names.
    estimate = slope(lambda t: (abs(t) + 2 * t, t >= 0), 1e-3)
    assert estimate.method == "forward"
    assert abs(estimate.value - 3.0) < 1e-9


def test_a_corner_on_both_sides_shrinks_the_step_then_skips():
    def jagged(t):
        return abs(t), np.floor(t / 1e-12)  # a corner every 1e-12: no step avoids them

    estimate = slope(jagged, 1e-3)
    assert estimate.method == "skipped" and estimate.value is None


def test_smooth_functions_take_the_central_difference():
    estimate = slope(lambda t: (np.exp(t), None), 1e-4)
    assert estimate.method == "central" and abs(estimate.value - 1.0) < 1e-8


def test_exact_ties_and_zeros_raise_no_false_alarm():
    # Constant images make every pooling window an exact tie and many relu inputs equal:
    # the rules' conventions (earliest lane, zero at zero) must still pass.
    tape = Tape(dtype=np.float64)
    weights = tape.parameter(init.normal(3, 0.5)(Shape([1, 2, 4, 4])).astype(np.float64))
    images = tape.input(Tensor.filled([1, 2, 4, 4], 0.0, dtype=np.float64))
    pooled = max_pool((images * weights).relu(), 2, 2)
    loss = (pooled * pooled).sum()
    feeds = {images.symbol: np.ones((1, 2, 4, 4))}
    report = check_gradients(tape, loss.symbol, [weights.symbol], feeds, directions=4)
    assert report.gradients_right, report.verdict()


def test_a_relu_exactly_at_zero_is_checked_one_sided():
    tape = Tape(dtype=np.float64)
    shift = tape.parameter(Tensor(Shape([4]), [0.0, 1.0, -1.0, 0.0], dtype=np.float64))
    loss = (shift.relu() * shift.exp()).sum()
    report = check_gradients(tape, loss.symbol, [shift.symbol], {}, directions=3)
    assert report.gradients_right, report.verdict()
    checked = report.parameters[0]
    # Every direction moves the two zeros: when both move up (or both down) one side
    # keeps the base point's mask and the difference is one-sided there; when they
    # part, both sides cross, and the direction is skipped, saying why.
    assert checked.one_sided + len(checked.skipped) == 3
    assert all("relu at 0" in reason for reason in checked.skipped)


def test_the_built_in_model_family_passes_on_its_corners():
    report = check(directions=3)
    assert report.gradients_right

"""A NumPy array beside a Value is the same clear TypeError on either side (issue 41).

Before, `array * value` went through NumPy's own dispatch: an object array of Values,
each a whole recorded node, and no error at all.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

from tests.support.user_models import record_gru
from topos import Tape, Tensor

OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv]


@pytest.mark.parametrize("combine", OPERATORS, ids=lambda f: f.__name__)
def test_an_array_on_either_side_is_the_same_error(combine):
    tape = Tape()
    weights = tape.parameter(Tensor.filled([8, 4], 1.0))
    array = np.ones((8, 4), np.float32)
    recorded = len(tape)
    with pytest.raises(TypeError) as right:
        combine(weights, array)
    with pytest.raises(TypeError) as left:
        combine(array, weights)
    assert str(left.value) == str(right.value)
    assert "ndarray" in str(left.value) and "tape.leaf" in str(left.value)
    assert len(tape) == recorded  # nothing was recorded on the way to the error


def test_an_array_beside_a_users_model_records_nothing():
    tape = Tape()
    recording = record_gru(tape, rows=2)
    loss = tape.value(recording.loss)
    recorded = len(tape)
    for attempt in (lambda: np.float32([2.0]) * loss, lambda: np.ones(()) + loss):
        with pytest.raises(TypeError, match="cannot combine a Value with ndarray"):
            attempt()
    with pytest.raises(TypeError, match="matmul"):
        _ = np.ones((1, 1), np.float32) @ loss
    with pytest.raises(TypeError, match="not an array"):
        np.asarray(loss)
    assert len(tape) == recorded


def test_numpy_scalars_are_numbers_on_either_side():
    tape = Tape()
    weights = tape.parameter(Tensor.filled([2], 3.0))
    for doubled in (np.float32(2.0) * weights, weights * np.float32(2.0)):
        assert doubled.shape == weights.shape
        assert tape.nodes[doubled.index].operation == "mul"

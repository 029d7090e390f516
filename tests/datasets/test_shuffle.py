"""shuffle against the scalar Fisher-Yates over a plain-integer splitmix64."""

import numpy as np
import pytest

from topos.datasets import shuffle

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def scalar_next(state: int) -> tuple[int, int]:
    state = (state + GAMMA) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def scalar_shuffle(items: list, state: int) -> int:
    for position in range(len(items) - 1, 0, -1):
        state, draw = scalar_next(state)
        partner = draw % (position + 1)
        items[position], items[partner] = items[partner], items[position]
    return state


@pytest.mark.parametrize("count", [0, 1, 2, 3, 10, 1000, 50_000])
def test_array_shuffle_equals_the_scalar_algorithm(count):
    expected = list(range(count))
    expected_state = scalar_shuffle(expected, 3)
    order = np.arange(count)
    assert shuffle(order, 3) == expected_state
    assert order.tolist() == expected


def test_list_is_shuffled_in_place_and_the_state_continues():
    items = list(range(100))
    expected = list(range(100))
    state = scalar_shuffle(expected, 5)
    state = scalar_shuffle(expected, state)
    next_state = shuffle(items, 5)
    assert shuffle(items, next_state) == state
    assert items == expected


def test_large_states_wrap_like_unsigned_64_bit():
    order = np.arange(20, dtype=np.int64)
    expected = list(range(20))
    assert shuffle(order, MASK) == scalar_shuffle(expected, MASK)
    assert order.tolist() == expected

"""The batch orders: the seed's shuffled batches (unchanged), and a language model's random
windows (offsets from splitmix64, any step computed directly)."""

from __future__ import annotations

import numpy as np
import pytest

from topos.datasets import shuffle
from topos.splitmix64 import SplitMix64
from topos.training import RandomWindows, ShuffledBatches, TooFewSamplesError


def test_shuffled_batches_are_the_seed_schedule():
    order = np.arange(100, dtype=np.int64)
    shuffle(order, 3)
    batches = ShuffledBatches(range(100), 8, 3)
    for step in (0, 1, 11, 12, 40):
        start = (step * 8) % (100 - 8)
        np.testing.assert_array_equal(batches.indices(step), order[start : start + 8])


def test_shuffled_batches_need_one_sample_more_than_a_batch():
    with pytest.raises(TooFewSamplesError, match="a batch of 8 needs at least 9"):
        ShuffledBatches(range(8), 8, 3)


def test_random_windows_continue_one_splitmix64_stream():
    windows = RandomWindows(range(1000), 4, 7, 65)
    stream = SplitMix64(7).draws(12)
    positions = np.uint64(1000 - 65 + 1)
    for step in range(3):
        expected = (stream[4 * step : 4 * step + 4] % positions).astype(np.int64)
        np.testing.assert_array_equal(windows.indices(step), expected)
        assert windows.indices(step).max() + 65 <= 1000


def test_random_windows_need_one_window():
    with pytest.raises(TooFewSamplesError):
        RandomWindows(range(64), 4, 7, 65)

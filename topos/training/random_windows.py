"""RandomWindows: a language model's batch order — windows of a text at offsets drawn from
splitmix64, independently for every step."""

from __future__ import annotations

from collections.abc import Sized

import numpy as np

from topos.splitmix64 import GOLDEN_GAMMA, MASK, SplitMix64
from topos.training.shuffled_batches import TooFewSamplesError


class RandomWindows:
    """Step `step` reads `batch_size` windows of `window` characters, at offsets
    `draw % (len(split) - window + 1)` for the draws `step * batch_size` to
    `(step + 1) * batch_size - 1` of the splitmix64 stream from `state`. Draw k's state
    is `state + (k + 1) * gamma`, so any step's offsets are computed directly."""

    def __init__(self, split: Sized, batch_size: int, state: int, window: int) -> None:
        if len(split) < window:
            raise TooFewSamplesError(f"a window of {window} needs at least {window}")
        self.batch_size = batch_size
        self.window = window
        self.state = state
        self.positions = len(split) - window + 1

    def indices(self, step: int) -> np.ndarray:
        """The windows' offsets for step `step`, `[batch_size]`."""
        skipped = step * self.batch_size
        generator = SplitMix64((self.state + skipped * GOLDEN_GAMMA) & MASK)
        draws = generator.draws(self.batch_size)
        return (draws % np.uint64(self.positions)).astype(np.int64)


def random_windows(window: int):
    """The batch-order factory of `RandomWindows` over windows of `window` characters, in
    the form a Workload takes: `(split, batch_size, state) -> order`."""

    def batches(split: Sized, batch_size: int, state: int) -> RandomWindows:
        return RandomWindows(split, batch_size, state, window)

    return batches

"""ShuffledBatches: the seed program's batch order — one Fisher-Yates shuffle of the samples,
read in consecutive batches that wrap around."""

from __future__ import annotations

from collections.abc import Sized

import numpy as np

from topos.datasets.shuffle import shuffle


class TooFewSamplesError(ValueError):
    """A split too small for a workload's batch order; the message says what it needs."""


class ShuffledBatches:
    """Batch `step` is `order[start : start + batch_size]` with `start = step * batch_size
    mod (len(split) - batch_size)`, `order` the samples shuffled once from `state`."""

    def __init__(self, split: Sized, batch_size: int, state: int) -> None:
        if len(split) <= batch_size:
            # The seed's schedule wraps around len(split) - batch_size: it needs one more.
            raise TooFewSamplesError(f"a batch of {batch_size} needs at least {batch_size + 1}")
        self.batch_size = batch_size
        self.length = len(split)
        self.order = np.arange(self.length, dtype=np.int64)
        shuffle(self.order, state)

    def indices(self, step: int) -> np.ndarray:
        """The sample indices step `step` trains on."""
        start = (step * self.batch_size) % (self.length - self.batch_size)
        return self.order[start : start + self.batch_size]

"""The splitmix64 generator: the one source of randomness behind initializers,
synthetic data and batch order, fixed forever so that streams never change."""

from __future__ import annotations

import numpy as np

GOLDEN_GAMMA = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1

_GAMMA = np.uint64(GOLDEN_GAMMA)
_MULTIPLIER_1 = np.uint64(0xBF58476D1CE4E5B9)
_MULTIPLIER_2 = np.uint64(0x94D049BB133111EB)
_UNIT_SCALE = 1.0 / float(1 << 53)


def mix(states: np.ndarray) -> np.ndarray:
    """Applies splitmix64's output function to an array of uint64 states."""
    mixed = states ^ (states >> np.uint64(30))
    mixed *= _MULTIPLIER_1
    mixed ^= mixed >> np.uint64(27)
    mixed *= _MULTIPLIER_2
    mixed ^= mixed >> np.uint64(31)
    return mixed


class SplitMix64:
    """A splitmix64 stream that owns its state; draws continue where the last ended.

    Vectorised: the k-th state is `seed + k * gamma (mod 2**64)`, so a block of
    draws is one arithmetic progression pushed through `mix`.
    """

    def __init__(self, state: int) -> None:
        self.state = int(state) & MASK

    def next(self) -> int:
        """Advances one step and returns the 64-bit output as a Python int."""
        return int(self.draws(1)[0])

    def draws(self, count: int) -> np.ndarray:
        """Advances `count` steps and returns their outputs as a uint64 array."""
        offsets = np.arange(1, count + 1, dtype=np.uint64)
        with np.errstate(over="ignore"):
            states = np.uint64(self.state) + offsets * _GAMMA
        self.state = (self.state + count * GOLDEN_GAMMA) & MASK
        with np.errstate(over="ignore"):
            return mix(states)

    def units(self, count: int) -> np.ndarray:
        """Draws `count` float64 values in [0, 1) as `(next >> 11) / 2**53`."""
        return (self.draws(count) >> np.uint64(11)).astype(np.float64) * _UNIT_SCALE

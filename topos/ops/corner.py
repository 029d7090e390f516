"""Corner: where a primitive's derivative is not defined, and how to tell which side a point
is on — declared by the primitive itself, read by `topos check`.

A corner's `signature(inputs, output, **attributes)` is a small array that changes exactly
when a point crosses one of the node's corners (the relu mask, which operand of a maximum
wins, each pooling window's winning lane); `name` is what a report calls crossing one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Signature = Callable[..., np.ndarray]


@dataclass(frozen=True)
class Corner:
    """How to tell the sides of a primitive's corners apart, and what to call crossing one."""

    signature: Signature
    name: str


def positive_side(
    inputs: Sequence[np.ndarray], output: np.ndarray, **attributes: Any
) -> np.ndarray:
    """Which entries of the first operand are above 0: the side of a corner at 0."""
    return np.greater(inputs[0], 0)


def own_output(inputs: Sequence[np.ndarray], output: np.ndarray, **attributes: Any):
    """The output itself: for a piecewise-constant primitive, its value is its side."""
    return np.array(output)

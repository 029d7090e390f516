"""Kinks: where a primitive's derivative is not defined, and how to tell which side a
point is on.

A *kink signature* of a node is a small array that changes exactly when a point
crosses one of the node's kinks: the relu mask, which operand of a maximum wins,
each pooling window's winning lane. Finite differences compare signatures to
notice a perturbation that crosses a kink (see `directional_difference`).

`KINKS` maps an operation to `signature(inputs, output, **attributes)`. A user who
registers a primitive with kinks of its own adds its signature with
`register_kink`; a primitive without one is taken to be smooth.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from topos.ops.primitive import REGISTRY

Signature = Callable[..., np.ndarray]


def _positive(inputs: Sequence[np.ndarray], output: np.ndarray, **attributes: Any) -> np.ndarray:
    return np.greater(inputs[0], 0)


def _right_wins(inputs: Sequence[np.ndarray], output: np.ndarray, **attributes: Any) -> np.ndarray:
    return np.greater(inputs[1], inputs[0])


def _pool_winners(inputs: Sequence[np.ndarray], output: np.ndarray, **attributes: Any):
    # The derivative's own routing, fed ones: 1 on each window's winning lane.
    ones = np.ones(output.shape, dtype=output.dtype)
    return REGISTRY["max_pool_route"].kernel(inputs[0], ones, **attributes) != 0


def _lane_winners(inputs: Sequence[np.ndarray], output: np.ndarray, **attributes: Any):
    return REGISTRY["lane_argmax"].kernel(inputs[0], **attributes)


def _own_output(inputs: Sequence[np.ndarray], output: np.ndarray, **attributes: Any):
    return np.array(output)


KINKS: dict[str, Signature] = {
    "relu": _positive,
    "heaviside": _positive,
    "abs": _positive,
    "maximum": _right_wins,
    "max_pool": _pool_winners,
    "lane_max": _lane_winners,
    "lane_argmax": _own_output,
}

#: What a report calls crossing each kind of kink.
KINK_NAMES: dict[str, str] = {
    "relu": "relu at 0",
    "heaviside": "the Heaviside step at 0",
    "abs": "abs at 0",
    "maximum": "a maximum's tie",
    "max_pool": "a max_pool window's tie",
    "lane_max": "a pooling lanes' tie",
    "lane_argmax": "a pooling lanes' tie",
}


def register_kink(operation: str, signature: Signature, name: str | None = None) -> None:
    """Declares that primitive `operation` has kinks, and how to tell their sides apart:
    `signature(inputs, output, **attributes)` must change exactly when one is crossed."""
    KINKS[operation] = signature
    KINK_NAMES[operation] = name or f"a kink of {operation}"


def kink_signature(
    operation: str, inputs: Sequence[np.ndarray], output: np.ndarray, attributes: dict
) -> np.ndarray | None:
    """The node's kink signature, or None for a smooth primitive."""
    signature = KINKS.get(operation)
    return None if signature is None else signature(inputs, output, **attributes)

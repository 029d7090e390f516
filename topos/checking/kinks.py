"""Kinks: where a node's derivative is not defined, as its primitive declares (`Kink`).

Finite differences compare kink signatures to notice a perturbation that crosses a
kink (see `directional_difference`). A user's primitive declares its kinks when it
is registered (`primitive(..., kink=Kink(signature, name))`) or afterwards with
`register_kink`; a primitive without one is taken to be smooth.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from topos.ops.kink import Kink, Signature
from topos.ops.primitive import REGISTRY


def register_kink(operation: str, signature: Signature, name: str | None = None) -> None:
    """Declares that primitive `operation` has kinks, and how to tell their sides apart:
    `signature(inputs, output, **attributes)` must change exactly when one is crossed."""
    REGISTRY[operation].kink = Kink(signature, name or f"a kink of {operation}")


def has_kinks(operation: str) -> bool:
    """Whether primitive `operation` declares kinks."""
    primitive = REGISTRY.get(operation)
    return primitive is not None and primitive.kink is not None


def kink_name(operation: str) -> str:
    """What a report calls crossing one of `operation`'s kinks."""
    primitive = REGISTRY.get(operation)
    return primitive.kink.name if primitive is not None and primitive.kink else "a kink"


def kink_signature(
    operation: str, inputs: Sequence[np.ndarray], output: np.ndarray, attributes: dict
) -> np.ndarray | None:
    """The node's kink signature, or None for a smooth primitive."""
    primitive = REGISTRY.get(operation)
    if primitive is None or primitive.kink is None:
        return None
    return primitive.kink.signature(inputs, output, **attributes)

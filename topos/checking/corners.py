"""Corners: where a node's derivative is not defined, as its primitive declares (`Corner`).

Finite differences compare corner signatures to notice a perturbation that crosses a
corner (see `directional_difference`). A user's primitive declares its corners when it
is registered (`primitive(..., corner=Corner(signature, name))`) or afterwards with
`register_corner`; a primitive without one is taken to be smooth.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from topos.ops.corner import Corner, Signature
from topos.ops.primitive import REGISTRY


def register_corner(operation: str, signature: Signature, name: str | None = None) -> None:
    """Declares that primitive `operation` has corners, and how to tell their sides apart:
    `signature(inputs, output, **attributes)` must change exactly when one is crossed."""
    REGISTRY[operation].corner = Corner(signature, name or f"a corner of {operation}")


def has_corners(operation: str) -> bool:
    """Whether primitive `operation` declares corners."""
    primitive = REGISTRY.get(operation)
    return primitive is not None and primitive.corner is not None


def corner_name(operation: str) -> str:
    """What a report calls crossing one of `operation`'s corners."""
    primitive = REGISTRY.get(operation)
    return primitive.corner.name if primitive is not None and primitive.corner else "a corner"


def corner_signature(
    operation: str, inputs: Sequence[np.ndarray], output: np.ndarray, attributes: dict
) -> np.ndarray | None:
    """The node's corner signature, or None for a smooth primitive."""
    primitive = REGISTRY.get(operation)
    if primitive is None or primitive.corner is None:
        return None
    return primitive.corner.signature(inputs, output, **attributes)

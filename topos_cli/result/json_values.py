"""How a loss becomes JSON: a number, or the word strict JSON lacks for it."""

from __future__ import annotations

import math

from topos_cli.result.float_bits import float32_value


def loss_for_json(bits: int) -> float | str:
    """A loss as a JSON number, or as `"nan"`, `"inf"`, `"-inf"`, which strict JSON lacks."""
    value = float32_value(bits)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value

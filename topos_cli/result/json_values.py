"""How verdict values become JSON: optional parts, and losses strict JSON cannot spell."""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

from topos_cli.result.float_bits import float32_value


def optional_json(value: Any) -> Any:
    """`value.to_json()`, or `None` for `None`."""
    return None if value is None else value.to_json()


def loss_for_json(bits: int) -> float | str:
    """A loss as a JSON number, or as `"nan"`, `"inf"`, `"-inf"`, which strict JSON lacks."""
    value = float32_value(bits)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def dataclass_json(instance: Any) -> dict[str, Any]:
    """A dataclass's fields as a JSON-ready dict, in order: parts by their own `to_json`,
    tuples as lists."""
    return {field.name: _json_value(getattr(instance, field.name)) for field in fields(instance)}


def _json_value(value: Any) -> Any:
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, tuple | list):
        return [_json_value(item) for item in value]
    return value

"""JsonFields: a dataclass whose JSON form is simply its fields, as `asdict` gives them."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any


class JsonFields:
    """A mixin for a dataclass whose JSON is every field in order, nested dataclasses as
    dicts: the statistics, settings, warnings and changes the results keep."""

    def to_json(self) -> dict[str, Any]:
        """The record's fields as a JSON-ready dict."""
        return asdict(self)

"""ResultPart: the base of every typed part of a result, and how one is read from JSON.

A result is untrusted input (a file anyone may have written or damaged), so every part
is a typed record: reading one checks each field's type, and the bounds its annotation
states (`Count`, `Bytes`, `Seconds`), and refuses anything else in one line that names
the field (`$.repeats[0].facts.ready.shards`). msgspec does the checking: it reads a
typed tree in one pass, refuses an integer or float out of range, and imports no NumPy,
so the grading parent stays light.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, TypeVar

import msgspec

#: A whole number of things (steps, repeats, nodes, shards): never negative, never huge.
Count = Annotated[int, msgspec.Meta(ge=0, le=2**53)]

#: A number of bytes: never negative.
Bytes = Annotated[int, msgspec.Meta(ge=0, le=2**62)]

#: A change in bytes (a training delta, what a prediction leaves unexplained): may be negative.
SignedBytes = Annotated[int, msgspec.Meta(ge=-(2**62), le=2**62)]

#: A duration in seconds: finite and never negative.
Seconds = Annotated[float, msgspec.Meta(ge=0.0, le=1e12)]

#: A ratio or fraction: finite (msgspec refuses a float out of range).
Ratio = Annotated[float, msgspec.Meta(ge=-1e300, le=1e300)]

#: A process id.
ProcessId = Annotated[int, msgspec.Meta(ge=0, le=2**31)]

R = TypeVar("R", bound="ResultPart")


class ResultPart(msgspec.Struct, kw_only=True, frozen=True):
    """A typed part of a result: its fields are its JSON object's keys, in order."""

    def to_json(self) -> dict[str, Any]:
        """The record as JSON-ready builtins (dicts, lists, numbers, strings)."""
        return msgspec.to_builtins(self, enc_hook=encode_other)

    @classmethod
    def from_json(cls: type[R], data: Any) -> R:
        """Reads a record from JSON-ready builtins; raises `msgspec.ValidationError`, whose
        message names the offending field."""
        return msgspec.convert(data, cls, dec_hook=decode_other)


def encode_other(value: Any) -> Any:
    """What msgspec cannot encode by itself: a bit pattern (as 8 hexadecimal digits) and a
    non-finite float (as `"nan"`, `"inf"` or `"-inf"`: strict JSON has neither)."""
    from topos_cli.result.float_bits import BitPattern

    if isinstance(value, BitPattern):
        return f"{int(value):08x}"
    raise NotImplementedError(f"cannot write a {type(value).__name__} into a result")


def decode_other(kind: type, value: Any) -> Any:
    """What msgspec cannot read by itself: a bit pattern from its hexadecimal digits."""
    from topos_cli.result.float_bits import BitPattern

    if kind is BitPattern:
        return BitPattern(value)
    raise NotImplementedError(f"cannot read a {kind.__name__} from a result")


def finite_or_none(value: float | None) -> float | None:
    """`value` when it is a finite number, else None: what a record keeps of a reading."""
    if value is None or isinstance(value, bool) or not math.isfinite(value):
        return None
    return float(value)

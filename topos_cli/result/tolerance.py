"""The tolerances a comparison applies (`CompareSettings`), and `--tolerance`, their text form:
how much slower or bigger a figure may get before it regresses."""

from __future__ import annotations

import math
from dataclasses import dataclass

from topos_cli.shared.errors import ToposUsageError
from topos_cli.shared.units import MEBIBYTE

#: What `--tolerance` accepts, for help texts and error messages.
SYNTAX = "time=10%,memory=5%; one bare value (10% or 0.1) sets both"


@dataclass(frozen=True)
class CompareSettings:
    """The tolerances and significance level a comparison applies."""

    #: A relative increase in median ms/step beyond which time regresses.
    time_tolerance: float = 0.10
    #: A relative increase in peak RSS or training delta beyond which memory regresses.
    memory_tolerance: float = 0.05
    significance_level: float = 0.05
    #: Memory changes smaller than this many bytes are within tolerance whatever their ratio.
    memory_floor_bytes: int = MEBIBYTE


def _fraction(text: str, whole: str) -> float:
    """`10%` or `0.1` as the fraction 0.1; raises `ToposUsageError` naming `whole`."""
    value = text.strip()
    try:
        fraction = float(value[:-1]) / 100.0 if value.endswith("%") else float(value)
    except ValueError:
        raise ToposUsageError(f"--tolerance {whole!r}: {value!r} is not a number") from None
    if not math.isfinite(fraction) or fraction < 0.0:
        raise ToposUsageError(f"--tolerance {whole!r}: {value!r} is not a non-negative fraction")
    return fraction


def parse_tolerance(text: str | None, base: CompareSettings | None = None) -> CompareSettings:
    """The comparison settings `text` asks for (`SYNTAX`), over `base` (the defaults)."""
    settings = base or CompareSettings()
    if text is None or not text.strip():
        return settings
    time, memory = settings.time_tolerance, settings.memory_tolerance
    items = [item.strip() for item in text.split(",")]
    if len(items) == 1 and "=" not in items[0]:
        time = memory = _fraction(items[0], text)
    else:
        for item in items:
            key, separator, value = item.partition("=")
            key = key.strip()
            if not separator or key not in ("time", "memory"):
                raise ToposUsageError(f"--tolerance {text!r}: expected {SYNTAX}")
            if key == "time":
                time = _fraction(value, text)
            else:
                memory = _fraction(value, text)
    return CompareSettings(
        time_tolerance=time,
        memory_tolerance=memory,
        significance_level=settings.significance_level,
        memory_floor_bytes=settings.memory_floor_bytes,
    )

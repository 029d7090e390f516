"""How figures are written for people: bytes, milliseconds, durations, and the missing figure."""

from __future__ import annotations

#: Bytes in a mebibyte, the unit every memory figure is shown in.
MEBIBYTE = 1024 * 1024

#: A table cell for a figure that was not measured.
DASH = "—"


def format_milliseconds(milliseconds: float, scale: float | None = None) -> str:
    """A time with about four significant digits: `337.2`, `12.41`, `0.812`.

    `scale` picks the decimals instead of the value itself, so a spread is
    printed to the same precision as the median it goes with.
    """
    magnitude = abs(milliseconds if scale is None else scale)
    if magnitude >= 100:
        return f"{milliseconds:.1f}"
    if magnitude >= 1:
        return f"{milliseconds:.2f}"
    return f"{milliseconds:.3f}"


def mebibytes_cell(count: float | None) -> str:
    """Bytes as MiB to one decimal without the unit (a table column names it), or a dash."""
    return DASH if count is None else f"{count / MEBIBYTE:.1f}"


def format_bytes(count: int | None, missing: str = "?") -> str:
    """Bytes as `123.4 MiB` (`12.0 KiB` below a mebibyte, so small figures are not 0.0),
    or `missing` when unknown."""
    if count is None:
        return missing
    if abs(count) < MEBIBYTE:
        return f"{count / 1024:.1f} KiB"
    return f"{count / MEBIBYTE:.1f} MiB"


def format_duration(seconds: float | None) -> str:
    """`42 s`, `3m05s`, `1h02m`, or `?` when unknown."""
    if seconds is None or seconds != seconds or seconds < 0:
        return "?"
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    minutes, second = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{second:02d}s"
    hours, minute = divmod(minutes, 60)
    return f"{hours}h{minute:02d}m"

"""float32 bit patterns, and how far apart two of them are in units in the last place.

Parity between routes is judged on bit patterns, never on printed values:
two losses agree exactly when their 32 bits do. When they do not, the
distance in ulps says whether they part by a rounding (1 ulp) or by a bug.
Bit patterns travel as 8 hexadecimal digits (`40135d8e`), as the seed
program prints them, so a result can be checked against it by eye.
"""

from __future__ import annotations

import math
import re
import struct

_SIGN = 0x8000_0000
_MAGNITUDE = 0x7FFF_FFFF
_EXPONENT = 0x7F80_0000
_MANTISSA = 0x007F_FFFF
_HEXADECIMAL = re.compile(r"[0-9a-fA-F]{1,8}")


def float32_bits(value: float) -> int:
    """The bit pattern of `value` rounded to float32, as an unsigned 32-bit integer.

    Raises `OverflowError` for a finite value beyond float32's range, as
    `struct` does; a worker reports its loss's bits from the float32 itself.
    """
    return struct.unpack("<I", struct.pack("<f", value))[0]


def float32_value(bits: int) -> float:
    """The float32 whose bit pattern is `bits`, widened exactly to a Python float."""
    return struct.unpack("<f", struct.pack("<I", check_bits(bits)))[0]


def check_bits(bits: int) -> int:
    """Returns `bits` if it is an unsigned 32-bit integer, else raises `ValueError`."""
    if isinstance(bits, bool) or not isinstance(bits, int) or not 0 <= bits <= 0xFFFF_FFFF:
        raise ValueError(f"a float32 bit pattern is an integer in [0, 2**32), not {bits!r}")
    return bits


def format_bits(bits: int) -> str:
    """The bit pattern as 8 lowercase hexadecimal digits, as the seed program prints it."""
    return f"{check_bits(bits):08x}"


def parse_bits(text: str | int) -> int:
    """Reads a bit pattern from 1 to 8 hexadecimal digits (an int is checked and returned)."""
    if isinstance(text, int):
        return check_bits(text)
    # `int(text, 16)` alone would also take "-1", "0x3f" and " 3f"; a pattern is digits only.
    if not isinstance(text, str) or not _HEXADECIMAL.fullmatch(text):
        raise ValueError(f"a float32 bit pattern is 8 hexadecimal digits, not {text!r}")
    return int(text, 16)


def is_nan(bits: int) -> bool:
    """Whether the pattern is a NaN: all exponent bits set and a non-zero mantissa."""
    return (bits & _EXPONENT) == _EXPONENT and (bits & _MANTISSA) != 0


def is_finite(bits: int) -> bool:
    """Whether the pattern is a finite number (neither infinite nor NaN)."""
    return (check_bits(bits) & _EXPONENT) != _EXPONENT


def ordered_integer(bits: int) -> int:
    """Maps a non-NaN pattern to an integer whose order is the float order.

    float32 is sign-magnitude: the magnitude bits grow with the value for
    positive numbers and with its absolute value for negative ones. Negating
    the magnitude of negative patterns makes the map monotone, and sends
    both zeros to 0, so +0 and -0 are 0 ulps apart (they compare equal).
    Adjacent floats, including the largest float and infinity, map to
    adjacent integers.
    """
    check_bits(bits)
    if is_nan(bits):
        raise ValueError(f"NaN ({format_bits(bits)}) has no place in the order of floats")
    magnitude = bits & _MAGNITUDE
    return -magnitude if bits & _SIGN else magnitude


def ulps_between(first: int, second: int) -> int | None:
    """How many float32 steps lie between two patterns; `None` when either is NaN.

    A NaN is not comparable with anything (its distance would be a lie),
    even with the very same NaN pattern; callers compare bits for equality
    first.
    """
    if is_nan(check_bits(first)) or is_nan(check_bits(second)):
        return None
    return abs(ordered_integer(first) - ordered_integer(second))


def describe_bits(bits: int) -> str:
    """A value and its pattern for people, e.g. `2.302585 (40135d8e)`; `nan (7fc00000)`."""
    value = float32_value(bits)
    if math.isnan(value):
        shown = "nan"
    elif math.isinf(value):
        shown = "inf" if value > 0 else "-inf"
    else:
        # Nine significant digits always distinguish two float32 values.
        shown = f"{value:.9g}"
    return f"{shown} ({format_bits(bits)})"


class BitPattern(int):
    """A float32 bit pattern as a result keeps it: an int in code, 8 hexadecimal digits in
    JSON (`topos_cli.result.result_part` writes and reads it so)."""

    def __new__(cls, bits: int | str) -> BitPattern:
        """Checks `bits` (an int, or 1 to 8 hexadecimal digits); raises `ValueError`."""
        return super().__new__(cls, parse_bits(bits))

    def __repr__(self) -> str:
        return f"BitPattern({format_bits(self)})"

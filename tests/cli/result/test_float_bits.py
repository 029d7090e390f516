"""Tests of float32 bit patterns and ulp distances: known patterns, edges, and order."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topos_cli.result.float_bits import (
    check_bits,
    describe_bits,
    float32_bits,
    float32_value,
    format_bits,
    is_finite,
    is_nan,
    ordered_integer,
    parse_bits,
    ulps_between,
)

POSITIVE_ZERO = 0x0000_0000
NEGATIVE_ZERO = 0x8000_0000
SMALLEST_POSITIVE = 0x0000_0001
SMALLEST_NEGATIVE = 0x8000_0001
LARGEST_FINITE = 0x7F7F_FFFF
POSITIVE_INFINITY = 0x7F80_0000
NEGATIVE_INFINITY = 0xFF80_0000
QUIET_NAN = 0x7FC0_0000


def test_known_bit_patterns():
    assert float32_bits(1.0) == 0x3F80_0000
    assert float32_bits(-2.0) == 0xC000_0000
    assert float32_bits(0.1) == 0x3DCC_CCCD  # rounded to float32, as a worker's loss is
    assert float32_bits(-0.0) == NEGATIVE_ZERO
    assert float32_value(0x3F80_0000) == 1.0
    assert float32_value(0x3DCC_CCCD) == pytest.approx(0.1, rel=1e-7)


def test_formatting_and_parsing_round_trip():
    assert format_bits(0x3F80_0000) == "3f800000"
    assert format_bits(1) == "00000001"
    assert parse_bits("3f800000") == 0x3F80_0000
    assert parse_bits("3F800000") == 0x3F80_0000
    assert parse_bits(0x3F80_0000) == 0x3F80_0000


@pytest.mark.parametrize("text", ["", "xyz", "123456789", "-1", "0x3f", " 3f", "3_f", 3.5, None])
def test_parse_bits_refuses_what_is_not_a_pattern(text):
    with pytest.raises(ValueError, match="bit pattern"):
        parse_bits(text)


@pytest.mark.parametrize("bits", [-1, 2**32, True, 1.0])
def test_check_bits_refuses_what_is_not_32_bits(bits):
    with pytest.raises(ValueError):
        check_bits(bits)


def test_adjacent_floats_are_one_ulp_apart():
    assert ulps_between(0x3F80_0000, 0x3F80_0001) == 1
    assert ulps_between(0x3F80_0001, 0x3F80_0000) == 1
    assert ulps_between(float32_bits(1.0), float32_bits(2.0)) == 2**23


def test_the_two_zeros_are_no_ulps_apart():
    assert ulps_between(POSITIVE_ZERO, NEGATIVE_ZERO) == 0


def test_distance_across_zero_counts_both_sides():
    assert ulps_between(SMALLEST_POSITIVE, SMALLEST_NEGATIVE) == 2
    assert ulps_between(float32_bits(-1.0), float32_bits(1.0)) == 2 * 0x3F80_0000


def test_infinity_is_one_ulp_past_the_largest_float():
    assert ulps_between(LARGEST_FINITE, POSITIVE_INFINITY) == 1
    assert not is_finite(POSITIVE_INFINITY)
    assert not is_finite(NEGATIVE_INFINITY)
    assert is_finite(LARGEST_FINITE)


def test_nan_is_not_comparable_even_with_itself():
    assert is_nan(QUIET_NAN)
    assert not is_nan(POSITIVE_INFINITY)
    assert ulps_between(QUIET_NAN, QUIET_NAN) is None
    assert ulps_between(QUIET_NAN, 0x3F80_0000) is None
    assert ulps_between(0x3F80_0000, 0xFFC0_0001) is None
    with pytest.raises(ValueError, match="NaN"):
        ordered_integer(QUIET_NAN)


def test_describe_bits_shows_enough_digits_to_tell_neighbours_apart():
    assert describe_bits(0x3F80_0000) == "1 (3f800000)"
    assert describe_bits(0x3F80_0001) == "1.00000012 (3f800001)"
    assert describe_bits(QUIET_NAN) == "nan (7fc00000)"
    assert describe_bits(NEGATIVE_INFINITY) == "-inf (ff800000)"


non_nan_bits = st.integers(0, 2**32 - 1).filter(lambda bits: not is_nan(bits))


@given(non_nan_bits, non_nan_bits)
def test_the_ordered_map_follows_the_order_of_the_floats(first, second):
    first_value, second_value = float32_value(first), float32_value(second)
    if first_value < second_value:
        assert ordered_integer(first) < ordered_integer(second)
    elif first_value == second_value:
        assert ulps_between(first, second) == 0
    else:
        assert ordered_integer(first) > ordered_integer(second)


@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_bits_round_trip_every_finite_float32(value):
    bits = float32_bits(value)
    assert float32_value(bits) == value
    assert math.copysign(1.0, float32_value(bits)) == math.copysign(1.0, value)
    assert parse_bits(format_bits(bits)) == bits

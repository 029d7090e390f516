"""Tests of the pure-Python statistics: hand-worked cases, published values, properties."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topos_cli.judge.statistics import (
    RatioEstimate,
    coefficient_of_variation,
    interquartile_range,
    median,
    outlier_indices,
    quantile,
    quartiles,
    ratio_estimate_of,
    ratio_of_medians,
    standard_deviation,
    summarize,
)

finite_floats = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


def test_median_of_odd_and_even_counts():
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert median([7.0]) == 7.0


def test_quantile_interpolates_linearly_between_order_statistics():
    # The position is (n - 1) * fraction: 0.75 for the lower quartile of four
    # values, three quarters of the way from the first value to the second.
    assert quantile([4.0, 3.0, 2.0, 1.0], 0.25) == 1.75
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.75) == 3.25
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.0) == 1.0
    assert quantile([1.0, 2.0, 3.0, 4.0], 1.0) == 4.0
    assert quartiles([float(value) for value in range(1, 10)]) == (3.0, 5.0, 7.0)
    assert interquartile_range([1.0, 2.0, 3.0, 4.0]) == 1.5


@pytest.mark.parametrize("values", [[], [1.0, math.nan]])
def test_statistics_refuse_empty_and_nan_samples(values):
    with pytest.raises(ValueError):
        median(values)


def test_quantile_refuses_a_fraction_outside_the_unit_interval():
    with pytest.raises(ValueError, match="quantile"):
        quantile([1.0], 1.5)


def test_coefficient_of_variation_uses_the_sample_standard_deviation():
    values = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]
    # Mean 5, squared deviations sum to 32, n - 1 = 7.
    assert standard_deviation(values) == pytest.approx(math.sqrt(32 / 7))
    assert coefficient_of_variation(values) == pytest.approx(math.sqrt(32 / 7) / 5)
    assert coefficient_of_variation([3.0]) == 0.0
    assert coefficient_of_variation([0.0, 0.0]) == 0.0
    assert coefficient_of_variation([-1.0, 1.0]) == math.inf


def test_outliers_lie_beyond_tukeys_fences():
    # Quartiles 11.25 and 13.75, IQR 2.5: fences at 7.5 and 17.5.
    values = [10.0, 11.0, 12.0, 13.0, 14.0, 100.0]
    assert outlier_indices(values) == [5]
    assert outlier_indices([*values, -50.0]) == [5, 6]
    assert outlier_indices([5.0, 5.0, 5.0]) == []
    assert outlier_indices(values, fence=100.0) == []


def test_summarize_gathers_every_figure():
    summary = summarize([1.0, 2.0, 3.0, 4.0, 10.0])
    assert summary.count == 5
    assert summary.median == 3.0
    assert (summary.lower_quartile, summary.upper_quartile) == (2.0, 4.0)
    assert summary.interquartile_range == 2.0
    assert (summary.minimum, summary.maximum) == (1.0, 10.0)
    assert summary.mean == 4.0
    assert summary.record().median == 3.0


def test_ratio_of_medians_is_exact_without_spread():
    estimate = ratio_of_medians([2.0] * 10, [1.0] * 10)
    assert estimate.ratio == 2.0
    assert estimate.uncertainty == 0.0
    assert (estimate.lower, estimate.upper) == (2.0, 2.0)


def test_ratio_of_medians_is_reproducible_and_covers_its_ratio():
    numerator = [1.0 + 0.01 * ((index * 37) % 23) for index in range(60)]
    denominator = [1.2 + 0.01 * ((index * 17) % 29) for index in range(60)]
    first = ratio_of_medians(numerator, denominator)
    second = ratio_of_medians(numerator, denominator)
    assert first == second
    assert first.lower <= first.ratio <= first.upper
    assert first.ratio - first.uncertainty <= first.lower
    assert first.upper <= first.ratio + first.uncertainty
    assert 0.0 < first.uncertainty < 0.1
    assert first.ratio == median(numerator) / median(denominator)


def test_a_known_estimate_is_taken_only_when_it_is_of_this_ratio_and_these_settings():
    numerator = [1.0 + 0.01 * ((index * 37) % 23) for index in range(60)]
    denominator = [1.2 + 0.01 * ((index * 17) % 29) for index in range(60)]
    computed = ratio_of_medians(numerator, denominator)
    stored = ratio_estimate_of(computed.record().to_json())
    assert stored == computed
    # Taken as it stands: an interval widened by hand is what comes back.
    widened = replace(computed, lower=computed.lower - 0.5, uncertainty=computed.uncertainty + 0.5)
    widened = replace(widened, uncertainty=computed.ratio - widened.lower)
    assert ratio_of_medians(numerator, denominator, known=widened) is widened
    others = [
        replace(widened, ratio=computed.ratio * 1.01),  # another ratio: other samples
        replace(widened, resamples=computed.resamples + 1),
        replace(widened, confidence=0.9),
        replace(widened, uncertainty=widened.uncertainty * 2),  # not its own interval
        replace(widened, lower=computed.ratio + 0.1, uncertainty=0.1),  # ratio outside it
    ]
    for other in others:
        assert ratio_of_medians(numerator, denominator, known=other) == computed


SOUND = {"ratio": 1, "lower": 1, "upper": 1, "uncertainty": 0, "confidence": 0.9, "resamples": 9}


def test_a_stored_estimate_is_read_back():
    assert ratio_estimate_of(SOUND) == RatioEstimate(1.0, 1.0, 1.0, 0.0, 0.9, 9)


@pytest.mark.parametrize(
    "stored",
    [
        None,
        [],
        {},
        {"ratio": 1.0, "lower": 1.0, "upper": 1.0, "uncertainty": 0.0, "confidence": 0.95},
        {**SOUND, "ratio": "1"},
        {**SOUND, "resamples": True},
        {**SOUND, "resamples": 9.0},
        {**SOUND, "upper": math.inf},
        {**SOUND, "lower": None},
    ],
)
def test_a_stored_estimate_that_is_not_one_is_none(stored):
    assert ratio_estimate_of(stored) is None


def test_ratio_of_medians_refuses_a_zero_denominator():
    with pytest.raises(ValueError, match="zero median"):
        ratio_of_medians([1.0], [0.0, 0.0, 1.0])


@given(st.lists(finite_floats, min_size=1, max_size=40))
def test_quartiles_are_ordered_and_within_the_extremes(values):
    lower, middle, upper = quartiles(values)
    assert min(values) <= lower <= middle <= upper <= max(values)

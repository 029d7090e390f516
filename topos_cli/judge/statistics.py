"""The statistics' records in the result (`Summary`, `RatioEstimate`) and the bootstrap of
a ratio of medians that makes one; the arithmetic itself (quantiles, Tukey's fences, the
hierarchical bootstrap, Welch's test) is the library's `topos.measurement.statistics`,
NumPy-free, which the benchmarks read too, so every judgement of time comes from one
module. Its functions are named here as well, for the judge's modules."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from topos.measurement.statistics import (
    BOOTSTRAP_SEED,
    CONFIDENCE,
    RESAMPLES,
    SEED,
    coefficient_of_variation,
    hierarchical_interval,
    interquartile_range,
    mean,
    median,
    outlier_indices,
    quantile,
    quantile_of_sorted,
    quartiles,
    sorted_values,
    standard_deviation,
    welch_p_value,
)
from topos_cli.result.judged_figure import figure
from topos_cli.result.ratio_estimate_record import RatioEstimateRecord
from topos_cli.result.summary_record import SummaryRecord

__all__ = [
    "BOOTSTRAP_SEED",
    "CONFIDENCE",
    "RESAMPLES",
    "SEED",
    "RatioEstimate",
    "Summary",
    "coefficient_of_variation",
    "hierarchical_interval",
    "interquartile_range",
    "mean",
    "median",
    "outlier_indices",
    "quantile",
    "quantile_of_sorted",
    "quartiles",
    "ratio_estimate_of",
    "ratio_of_medians",
    "sorted_values",
    "standard_deviation",
    "summarize",
    "welch_p_value",
]


@dataclass(frozen=True)
class Summary:
    """The order statistics and spread of one sample."""

    count: int
    median: float
    lower_quartile: float
    upper_quartile: float
    interquartile_range: float
    minimum: float
    maximum: float
    mean: float
    coefficient_of_variation: float

    def record(self) -> SummaryRecord:
        """The summary as a verdict keeps it (its fields, an infinite variation as `"inf"`)."""
        fields = asdict(self)
        fields["coefficient_of_variation"] = figure(self.coefficient_of_variation)
        return SummaryRecord(**fields)


def summarize(values: Sequence[float]) -> Summary:
    """Summarizes a non-empty sample: quartiles, extremes, mean and coefficient of variation."""
    ordered = sorted_values(values)
    lower = quantile_of_sorted(ordered, 0.25)
    upper = quantile_of_sorted(ordered, 0.75)
    return Summary(
        count=len(ordered),
        median=quantile_of_sorted(ordered, 0.5),
        lower_quartile=lower,
        upper_quartile=upper,
        interquartile_range=upper - lower,
        minimum=ordered[0],
        maximum=ordered[-1],
        mean=math.fsum(ordered) / len(ordered),
        coefficient_of_variation=coefficient_of_variation(ordered),
    )


@dataclass(frozen=True)
class RatioEstimate:
    """A ratio of medians with a bootstrap interval around it.

    `uncertainty` is the larger distance from `ratio` to either end of the
    interval, so `ratio ± uncertainty` always covers the interval even when
    the interval is lopsided.
    """

    ratio: float
    lower: float
    upper: float
    uncertainty: float
    confidence: float
    resamples: int

    def record(self) -> RatioEstimateRecord:
        """The estimate as a verdict keeps it: its fields."""
        return RatioEstimateRecord(**asdict(self))


def ratio_of_medians(
    numerator: Sequence[float],
    denominator: Sequence[float],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
    known: RatioEstimate | None = None,
) -> RatioEstimate:
    """The ratio `median(numerator) / median(denominator)` with a percentile-bootstrap interval.

    `known` is an estimate computed before from the same samples with the same seed (as
    a result file stores it): it is returned as it stands when its ratio, resamples and
    confidence match these, since the bootstrap would only draw the same interval again.
    A report recomputing a grade's verdict from the grade's own runs is spared that way
    a tenth of a second; an estimate that does not match is ignored.

    Why a bootstrap rather than propagating each median's IQR: step times
    are skewed and heavy-tailed (a stalled step is far slower, never far
    faster), so the normal-theory standard error of a median that IQR
    propagation assumes is off exactly where it matters, and propagation
    also needs a correlation assumption between the two samples. The
    bootstrap resamples each sample independently with replacement, takes
    the ratio of the resampled medians, and reads the interval off the
    resulting distribution's percentiles: no distributional assumption, and
    the interval of the reciprocal ratio is the reciprocal interval. The
    generator is a `random.Random` with a fixed seed, so the same data give
    the same interval every time.

    What it does not see: steps within one run are not independent (a
    machine drifts), so this interval is the uncertainty of the medians
    *given* these runs; drift between runs shows in the spread across
    repeats, which the verdict reports beside it.
    """
    if resamples < 1:
        raise ValueError(f"a bootstrap needs at least one resample, not {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"a confidence lies in (0, 1), not {confidence}")
    top = sorted_values(numerator)
    bottom = sorted_values(denominator)
    bottom_median = quantile_of_sorted(bottom, 0.5)
    if bottom_median == 0.0:
        raise ValueError("a ratio over a zero median is undefined")
    ratio = quantile_of_sorted(top, 0.5) / bottom_median
    if known is not None and _matches(known, ratio, resamples, confidence):
        return known
    generator = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        top_sample = sorted(generator.choices(top, k=len(top)))
        bottom_sample = sorted(generator.choices(bottom, k=len(bottom)))
        bottom_sample_median = quantile_of_sorted(bottom_sample, 0.5)
        # A resample of mostly zeros has no ratio; it says nothing either way.
        if bottom_sample_median != 0.0:
            ratios.append(quantile_of_sorted(top_sample, 0.5) / bottom_sample_median)
    if not ratios:
        return RatioEstimate(ratio, ratio, ratio, 0.0, confidence, resamples)
    ratios.sort()
    tail = (1.0 - confidence) / 2.0
    lower = min(quantile_of_sorted(ratios, tail), ratio)
    upper = max(quantile_of_sorted(ratios, 1.0 - tail), ratio)
    uncertainty = max(ratio - lower, upper - ratio)
    return RatioEstimate(ratio, lower, upper, uncertainty, confidence, resamples)


def _matches(known: RatioEstimate, ratio: float, resamples: int, confidence: float) -> bool:
    """Whether a stored estimate is of this ratio with these settings, and well formed."""
    return (
        known.ratio == ratio
        and known.resamples == resamples
        and known.confidence == confidence
        and known.lower <= ratio <= known.upper
        and known.uncertainty == max(ratio - known.lower, known.upper - ratio)
    )


def ratio_estimate_of(stored: object) -> RatioEstimate | None:
    """The `RatioEstimate` a result stores as JSON (its `to_json`), or None when `stored`
    is not one (a field missing, of another type, or not finite)."""
    if not isinstance(stored, Mapping):
        return None
    fields = ("ratio", "lower", "upper", "uncertainty", "confidence")
    values = [stored.get(name) for name in fields]
    resamples = stored.get("resamples")
    numbers = all(
        isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        for value in values
    )
    if not numbers or not isinstance(resamples, int) or isinstance(resamples, bool):
        return None
    ratio, lower, upper, uncertainty, confidence = (float(value) for value in values)
    return RatioEstimate(ratio, lower, upper, uncertainty, confidence, resamples)

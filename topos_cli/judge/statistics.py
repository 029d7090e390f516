"""Descriptive statistics for the verdict, in pure Python.

The parent process must stay light (no NumPy), and SciPy is not a dependency,
so everything here is written out: quantiles by linear interpolation (the
"type 7" definition NumPy and R use by default), Tukey's outlier fences,
a bootstrap interval for a ratio of medians, and what a time claim rests on
(`time_judgement`): the hierarchical bootstrap and Welch's test.

**The hierarchical bootstrap.** A side's figure is the median of its usable repeats'
medians (of undisturbed steps); the ratio is new over old (a route over its
reference). Its interval is a hierarchical bootstrap, `RESAMPLES` (1000) draws from a
fixed seed: resample the repeats with replacement, then each chosen repeat's steps
with replacement, take each repeat's median and the median of those. The resampled
median of a repeat is drawn exactly and in O(1) (the k-th order statistic of m
uniform draws is Beta(k, m + 1 - k) distributed), so the work is bounded by
resamples times repeats whatever the number of steps.

**The test.** With at least `MIN_REPEATS` (`time_judgement`) usable repeats each,
Welch's t-test on the logarithms of the per-repeat medians (two-sided). Not a rank test:
with 3 repeats a side no exact rank or permutation test can reach p < 0.05 (3 against 3
gives 0.10 at best), and a per-repeat median of many steps is close to normal; the
logarithm makes the test one of ratios. With fewer repeats: *not tested*.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from topos_cli.result.judged_figure import figure
from topos_cli.result.ratio_estimate_record import RatioEstimateRecord
from topos_cli.result.summary_record import SummaryRecord

#: The seed of the bootstrap's generator: fixed, so a verdict is reproducible
#: from its raw data, bit for bit.
BOOTSTRAP_SEED = 20260814


def _sorted_values(values: Sequence[float]) -> list[float]:
    """Returns the values sorted, refusing an empty sequence or a NaN."""
    if len(values) == 0:
        raise ValueError("statistics of an empty sequence are undefined")
    ordered = sorted(float(value) for value in values)
    # A NaN sorts anywhere; it would silently corrupt every order statistic.
    if any(math.isnan(value) for value in ordered):
        raise ValueError("statistics of a sequence holding NaN are undefined")
    return ordered


def quantile_of_sorted(ordered: Sequence[float], fraction: float) -> float:
    """The quantile of already sorted values free of NaN, by linear interpolation between
    ranks: `quantile` without its checks, for a loop whose values are known good."""
    position = (len(ordered) - 1) * fraction
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    weight = position - below
    return ordered[below] + (ordered[above] - ordered[below]) * weight


def quantile(values: Sequence[float], fraction: float) -> float:
    """The `fraction` quantile (0 to 1) by linear interpolation between order statistics."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"a quantile fraction lies in [0, 1], not {fraction}")
    return quantile_of_sorted(_sorted_values(values), fraction)


def median(values: Sequence[float]) -> float:
    """The middle value; the mean of the two middle values for an even count."""
    return quantile(values, 0.5)


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """The lower quartile, the median and the upper quartile."""
    ordered = _sorted_values(values)
    return (
        quantile_of_sorted(ordered, 0.25),
        quantile_of_sorted(ordered, 0.5),
        quantile_of_sorted(ordered, 0.75),
    )


def interquartile_range(values: Sequence[float]) -> float:
    """The upper quartile minus the lower quartile: the spread of the middle half."""
    lower, _, upper = quartiles(values)
    return upper - lower


def mean(values: Sequence[float]) -> float:
    """The arithmetic mean, summed exactly (`math.fsum`)."""
    ordered = _sorted_values(values)
    return math.fsum(ordered) / len(ordered)


def standard_deviation(values: Sequence[float]) -> float:
    """The sample standard deviation (n - 1 in the denominator); 0 for one value."""
    ordered = _sorted_values(values)
    if len(ordered) < 2:
        return 0.0
    average = math.fsum(ordered) / len(ordered)
    squares = math.fsum((value - average) ** 2 for value in ordered)
    return math.sqrt(squares / (len(ordered) - 1))


def coefficient_of_variation(values: Sequence[float]) -> float:
    """The sample standard deviation over the mean: spread relative to size.

    One value has no observed spread, so 0. A zero mean with a spread is
    infinitely variable relative to its size.
    """
    deviation = standard_deviation(values)
    average = mean(values)
    if average == 0.0:
        return 0.0 if deviation == 0.0 else math.inf
    return deviation / abs(average)


def outlier_indices(values: Sequence[float], fence: float = 1.5) -> list[int]:
    """The positions of values beyond Tukey's fences: `fence` IQRs outside the quartiles.

    Step times are right-skewed and a stalled step (another program, a page
    fault storm) is what we want to see, so a rank-based fence fits better
    than a standard-deviation rule that the stall itself inflates.
    """
    lower, _, upper = quartiles(values)
    spread = upper - lower
    low_fence = lower - fence * spread
    high_fence = upper + fence * spread
    return [index for index, value in enumerate(values) if value < low_fence or value > high_fence]


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
    ordered = _sorted_values(values)
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
    top = _sorted_values(numerator)
    bottom = _sorted_values(denominator)
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


#: Bootstrap draws, confidence and seed: the interval is the same from the same data.
RESAMPLES = 1000

CONFIDENCE = 0.95

SEED = 20260814


def _resampled_median(ordered: Sequence[float], generator: random.Random) -> float:
    """The median of one bootstrap resample (m draws with replacement) of sorted values,
    drawn exactly in O(1): the k-th smallest of m uniforms is Beta(k, m + 1 - k)."""
    count = len(ordered)
    if count == 1:
        return ordered[0]
    k = (count + 1) // 2
    low = generator.betavariate(k, count + 1 - k)
    first = ordered[min(int(low * count), count - 1)]
    if count % 2:
        return first
    # The next order statistic: the smallest of the m - k uniforms above `low`.
    high = low + (1.0 - low) * (1.0 - generator.random() ** (1.0 / (count - k)))
    return (first + ordered[min(int(high * count), count - 1)]) / 2.0


def hierarchical_interval(
    new_steps: Sequence[Sequence[float]],
    old_steps: Sequence[Sequence[float]],
    *,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float, float]:
    """The ratio of the median of per-repeat medians (new over old) and its percentile
    interval by a hierarchical bootstrap: repeats, then steps within each repeat.
    Each group is one repeat's step times, sorted. Deterministic for a seed."""
    new_groups = [sorted(group) for group in new_steps if group]
    old_groups = [sorted(group) for group in old_steps if group]
    if not new_groups or not old_groups:
        raise ValueError("a ratio needs step times on both sides")
    ratio = median([median(g) for g in new_groups]) / median([median(g) for g in old_groups])
    generator = random.Random(seed)
    choose = generator.choice
    ratios = []
    # The resamples' medians are of step times already checked finite: the median of
    # each sorted list by `quantile_of_sorted` (the arithmetic of `median`, so the same
    # interval to the bit) skips `quantile`'s checks, a tenth of this loop's time; the
    # rest is `betavariate`, whose draws fix the interval.
    for _ in range(resamples):
        top = quantile_of_sorted(
            sorted([_resampled_median(choose(new_groups), generator) for _ in new_groups]), 0.5
        )
        bottom = quantile_of_sorted(
            sorted([_resampled_median(choose(old_groups), generator) for _ in old_groups]), 0.5
        )
        if bottom > 0:
            ratios.append(top / bottom)
    if not ratios:
        return ratio, ratio, ratio
    ratios.sort()
    tail = (1.0 - confidence) / 2.0
    lower = min(quantile(ratios, tail), ratio)
    upper = max(quantile(ratios, 1.0 - tail), ratio)
    return ratio, lower, upper


def welch_p_value(first: Sequence[float], second: Sequence[float]) -> float | None:
    """Welch's two-sided t-test p of two samples (at least two values each), or `None`.

    Equal samples with no spread on either side: p = 1 if their means agree, else 0.
    """
    if len(first) < 2 or len(second) < 2:
        return None
    n1, n2 = len(first), len(second)
    m1, m2 = math.fsum(first) / n1, math.fsum(second) / n2
    v1 = math.fsum((x - m1) ** 2 for x in first) / (n1 - 1)
    v2 = math.fsum((x - m2) ** 2 for x in second) / (n2 - 1)
    spread = v1 / n1 + v2 / n2
    if spread == 0.0:
        return 1.0 if m1 == m2 else 0.0
    t = (m1 - m2) / math.sqrt(spread)
    freedom = spread**2 / ((v1 / n1) ** 2 / (n1 - 1) + (v2 / n2) ** 2 / (n2 - 1))
    return _regularized_beta(freedom / (freedom + t * t), freedom / 2.0, 0.5)


def _regularized_beta(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction
    (Lentz's method, as Numerical Recipes' `betai`): the t distribution's two tails."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(x, a, b) / a
    return 1.0 - front * _beta_fraction(1.0 - x, b, a) / b


def _beta_fraction(x: float, a: float, b: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return result

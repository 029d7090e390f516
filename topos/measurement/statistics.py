"""Statistics of measurements, in pure Python: what every judgement of time rests on.

NumPy-free and loading nothing at import (the grade's parent process stays light, and a
benchmark may use them without the command), and SciPy is not a dependency, so
everything is written out: quantiles by linear interpolation (the "type 7" definition
NumPy and R use by default), Tukey's outlier fences, the hierarchical bootstrap of a
ratio of medians and Welch's test. The grader's judgement (`topos_cli.judge`) and the
benchmarks read them from here, so a benchmark's medians and intervals are the grader's.

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

import functools
import math
import random
from collections.abc import Sequence

#: The seed of the bootstrap's generator: fixed, so a verdict is reproducible
#: from its raw data, bit for bit.
BOOTSTRAP_SEED = 20260814


def sorted_values(values: Sequence[float]) -> list[float]:
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
    return quantile_of_sorted(sorted_values(values), fraction)


def median(values: Sequence[float]) -> float:
    """The middle value; the mean of the two middle values for an even count."""
    return quantile(values, 0.5)


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """The lower quartile, the median and the upper quartile."""
    ordered = sorted_values(values)
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
    ordered = sorted_values(values)
    return math.fsum(ordered) / len(ordered)


def standard_deviation(values: Sequence[float]) -> float:
    """The sample standard deviation (n - 1 in the denominator); 0 for one value."""
    ordered = sorted_values(values)
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
    new_groups = tuple(tuple(sorted(group)) for group in new_steps if group)
    old_groups = tuple(tuple(sorted(group)) for group in old_steps if group)
    if not new_groups or not old_groups:
        raise ValueError("a ratio needs step times on both sides")
    return _bootstrapped_interval(new_groups, old_groups, resamples, confidence, seed)


# A pure function of its arguments, and the bootstrap costs some 60 ms of pure Python a
# pair: one grade's table, verdict and result judge the same pair of series several
# times, and `history` or `compare` the same pairs once per table they draw.
@functools.lru_cache(maxsize=512)
def _bootstrapped_interval(
    new_groups: tuple[tuple[float, ...], ...],
    old_groups: tuple[tuple[float, ...], ...],
    resamples: int,
    confidence: float,
    seed: int,
) -> tuple[float, float, float]:
    """`hierarchical_interval` of groups already sorted and made tuples."""
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

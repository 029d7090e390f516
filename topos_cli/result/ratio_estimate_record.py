"""RatioEstimateRecord: a ratio of medians with its bootstrap interval, as a verdict keeps it."""

from __future__ import annotations

from topos_cli.result.result_part import Count, Ratio, ResultPart


class RatioEstimateRecord(ResultPart, forbid_unknown_fields=False):
    """A ratio, its interval and `uncertainty` (the larger distance from the ratio to an
    end), at `confidence` over `resamples` bootstrap draws."""

    ratio: Ratio
    lower: Ratio
    upper: Ratio
    uncertainty: Ratio
    confidence: Ratio = 0.95
    resamples: Count = 1000

"""SummaryRecord: the order statistics and spread of one sample (`statistics.summarize`)."""

from __future__ import annotations

from topos_cli.result.judged_figure import Figure
from topos_cli.result.result_part import Count, Ratio, ResultPart


class SummaryRecord(ResultPart, forbid_unknown_fields=False):
    """A sample's count, quartiles, extremes, mean and coefficient of variation."""

    count: Count = 0
    median: Ratio = 0.0
    lower_quartile: Ratio = 0.0
    upper_quartile: Ratio = 0.0
    interquartile_range: Ratio = 0.0
    minimum: Ratio = 0.0
    maximum: Ratio = 0.0
    mean: Ratio = 0.0
    #: Infinite for a zero mean with a spread (kept as `"inf"`).
    coefficient_of_variation: Figure = 0.0

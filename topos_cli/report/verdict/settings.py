"""The thresholds a verdict applies, and the route every other route is measured against."""

from __future__ import annotations

from dataclasses import dataclass

from topos_cli.result.json_record import JsonRecord

#: The route every other route is measured against.
REFERENCE_ROUTE = "engine"


@dataclass(frozen=True)
class VerdictSettings(JsonRecord):
    """The thresholds the verdict applies; the defaults are the documented ones."""

    reference: str = REFERENCE_ROUTE
    #: Leading measured steps left out of the median (their times are reported on their own).
    warmup_steps: int = 1
    #: Routes within a factor of 1 + this of the reference's time are "the speed"; faster
    #: or slower is claimed only beyond it (`time_judgement`).
    speed_tolerance: float = 0.03
    #: The p-value (Welch's, on log per-repeat medians) under which a difference in speed
    #: is significant.
    significance_level: float = 0.05
    #: Warn when a route's step times vary by more than this coefficient of variation.
    variation_limit: float = 0.10
    #: Tukey's fence, in IQRs beyond the quartiles, past which a step is an outlier.
    outlier_fence: float = 1.5
    #: Warn when more than this fraction of a route's steps are outliers.
    outlier_fraction_limit: float = 0.05
    #: Warn when a route's per-repeat medians span more than this fraction of their median.
    repeat_spread_limit: float = 0.10
    #: Warn when the load average exceeds this many runnable processes per core.
    load_per_core_limit: float = 0.5
    bootstrap_resamples: int = 1000
    confidence: float = 0.95

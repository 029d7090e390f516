"""The thresholds a verdict applies, and the route every other route is measured against.

A result keeps them beside its verdict, and the report recomputes with them: so each is
bounded, and a file cannot ask the reader for unbounded work (10^11 bootstrap resamples).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from topos_cli.result.result_part import ResultPart

#: The route every other route is measured against.
REFERENCE_ROUTE = "engine"

#: A fraction or probability.
Fraction = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]

#: A positive factor, such as a threshold on a ratio or a fence in IQRs.
Factor = Annotated[float, msgspec.Meta(ge=0.0, le=1e6)]


class VerdictSettings(ResultPart):
    """The thresholds the verdict applies; the defaults are the documented ones."""

    reference: str = REFERENCE_ROUTE
    #: Leading measured steps left out of the median (their times are reported on their own).
    warmup_steps: Annotated[int, msgspec.Meta(ge=0, le=1_000_000)] = 1
    #: Routes within a factor of 1 + this of the reference's time are "the speed"; faster
    #: or slower is claimed only beyond it (`time_judgement`).
    speed_tolerance: Factor = 0.03
    #: The p-value (Welch's, on log per-repeat medians) under which a difference in speed
    #: is significant.
    significance_level: Fraction = 0.05
    #: Warn when a route's step times vary by more than this coefficient of variation.
    variation_limit: Factor = 0.10
    #: Tukey's fence, in IQRs beyond the quartiles, past which a step is an outlier.
    outlier_fence: Factor = 1.5
    #: Warn when more than this fraction of a route's steps are outliers.
    outlier_fraction_limit: Fraction = 0.05
    #: Warn when a route's per-repeat medians span more than this fraction of their median.
    repeat_spread_limit: Factor = 0.10
    #: Warn when the load average exceeds this many runnable processes per core.
    load_per_core_limit: Factor = 0.5
    #: A peer route (torch, jax) computes the same program as topos: at step 0 its loss's
    #: relative difference from topos's, `|a - b| / max(|a|, |b|)`, is within this (float32
    #: rounding gives some 1e-7; a wrong emission, a sign or a missing term, far more).
    #: `--peer-tolerance loss=...`.
    peer_loss_tolerance: Factor = 1e-5
    #: ... and each parameter's gradient at step 0 is within this relative error (the norm
    #: of the difference over the norm of topos's gradient; some 1e-6 measured on the test
    #: models). `--peer-tolerance gradient=...`.
    peer_gradient_tolerance: Factor = 1e-4
    #: After step 0 training amplifies rounding, by orders of magnitude over a run on a
    #: correct program: a peer's step t agrees while its relative loss difference is within
    #: the larger of `peer_loss_tolerance` and this many times float32's own drift by step t
    #: (the running maximum of topos's and the peer's float32 losses' relative differences
    #: from their own float64 trajectories). Between two correct programs the difference
    #: is at most the sum of the two drifts and float64's (twice the envelope); 10 leaves
    #: room. `--peer-tolerance drift=...`.
    peer_drift_factor: Factor = 10.0
    #: Resamples of a bootstrap interval: enough for two digits, bounded for a file's sake.
    bootstrap_resamples: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 1000
    confidence: Annotated[float, msgspec.Meta(gt=0.0, lt=1.0)] = 0.95

"""A route's speed as a verdict keeps it: its time per step, and its ratio to another's."""

from __future__ import annotations

import msgspec

from topos_cli.result.judged_figure import Figure
from topos_cli.result.ratio_estimate_record import RatioEstimateRecord
from topos_cli.result.result_part import Count, Ratio, ResultPart
from topos_cli.result.summary_record import SummaryRecord
from topos_cli.result.time_judgement_record import TimeJudgementRecord


class SpeedRatioRecord(ResultPart, forbid_unknown_fields=False):
    """A route's speed against another's (`speed.SpeedRatio`): `factor` times `direction`
    (`faster`, `slower`, `same`, `unclear`, `inconclusive`), its phrase and judgement."""

    factor: Ratio
    direction: str
    #: Infinite when the interval reaches a zero time (kept as `"inf"`).
    uncertainty: Figure
    time_ratio: RatioEstimateRecord
    p_value: Ratio | None = None
    significant: bool | None = None
    tentative: bool = False
    phrase: str = ""
    judgement: TimeJudgementRecord | None = None


class SpeedRecord(ResultPart, forbid_unknown_fields=False):
    """A route's time per step over its completed repeats, in milliseconds (the raw step
    times live in the repeats)."""

    milliseconds_per_step: SummaryRecord
    cpu_milliseconds_per_step: Ratio | None = None
    disturbed_steps: Count | None = None
    disturbance_evidence: str | None = None
    machine_note: str | None = None
    repeat_medians_milliseconds: list[Ratio] = msgspec.field(default_factory=list)
    repeat_minimum_milliseconds: Ratio | None = None
    repeat_maximum_milliseconds: Ratio | None = None
    first_step_milliseconds: Ratio | None = None
    excluded_steps: Count = 0
    outliers: Count = 0
    ratio: SpeedRatioRecord | None = None

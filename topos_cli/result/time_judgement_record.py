"""TimeJudgementRecord: one judgement of time as a verdict keeps it (`time_judgement`)."""

from __future__ import annotations

from topos_cli.result.evidence_record import SideEvidenceRecord
from topos_cli.result.result_part import Count, Ratio, ResultPart


class TimeJudgementRecord(ResultPart, forbid_unknown_fields=False):
    """How one route's time compares with another's: the ratio (new over old) and its
    interval, the test, the outcome and why, each side's evidence, and the words the
    judgement derives (`claim`, `repeats_text`, `has_interval`, `test`), kept so a reader
    of the file needs no judge to say them."""

    ratio: Ratio | None = None
    lower: Ratio | None = None
    upper: Ratio | None = None
    confidence: Ratio = 0.95
    resamples: Count = 1000
    tolerance: Ratio = 0.0
    p_value: Ratio | None = None
    significance_level: Ratio = 0.05
    outcome: str = "inconclusive"
    reason: str = ""
    inconclusive_because: str | None = None
    new: SideEvidenceRecord = SideEvidenceRecord()
    old: SideEvidenceRecord = SideEvidenceRecord()
    claim: bool = False
    repeats_text: str = ""
    has_interval: bool = False
    test: str = ""

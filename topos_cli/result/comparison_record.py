"""ComparisonRecord: two results of one workload compared (`topos compare`, `--baseline`),
as a result keeps it."""

from __future__ import annotations

import msgspec

from topos_cli.result.count_change_record import CountChangeRecord
from topos_cli.result.result_part import Ratio, ResultPart
from topos_cli.result.time_judgement_record import TimeJudgementRecord
from topos_cli.result.tolerance import CompareSettings


class FigureChangeRecord(ResultPart, forbid_unknown_fields=False):
    """How one figure of one route changed (`compare.FigureChange`), with, for time, the
    judgement it comes from."""

    route: str
    figure: str
    unit: str = ""
    old: Ratio | None = None
    new: Ratio | None = None
    change: Ratio | None = None
    tolerance: Ratio = 0.0
    p_value: Ratio | None = None
    significant: bool | None = None
    status: str = "missing"
    time: TimeJudgementRecord | None = None


class ComparisonRecord(ResultPart, forbid_unknown_fields=False):
    """The comparison: its sentence and exit status, each figure's change, each route's
    counted work, the notes, what did not finish, and the tolerances applied."""

    workload: str = ""
    summary: str = ""
    exit_status: int = 0
    changes: list[FigureChangeRecord] = msgspec.field(default_factory=list)
    counts: list[CountChangeRecord] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)
    count_notes: list[str] = msgspec.field(default_factory=list)
    failures: list[str] = msgspec.field(default_factory=list)
    settings: CompareSettings = msgspec.field(default_factory=CompareSettings)

"""CheckoutComparisonRecord: this checkout against `--against`'s, as a result keeps it."""

from __future__ import annotations

import msgspec

from topos_cli.result.count_change_record import CountChangeRecord
from topos_cli.result.result_part import Count, Ratio, ResultPart
from topos_cli.result.time_judgement_record import TimeJudgementRecord
from topos_cli.result.tolerance import CompareSettings


class AgainstTimeRecord(TimeJudgementRecord, forbid_unknown_fields=False):
    """A route's time against the other checkout's: the judgement, and its phrase."""

    phrase: str = ""


class MemoryChangeRecord(ResultPart, forbid_unknown_fields=False):
    """One memory figure of one route in both checkouts (`against.MemoryChange`)."""

    figure: str
    this_bytes: Ratio | None = None
    other_bytes: Ratio | None = None
    change: Ratio | None = None
    status: str = "missing"


class BitsAgreementRecord(ResultPart, forbid_unknown_fields=False):
    """Whether both checkouts trained the same loss bits on a route, and its phrase."""

    status: str
    first_difference: Count | None = None
    this_bits: str | None = None
    other_bits: str | None = None
    phrase: str = ""


class RouteAgainstRecord(ResultPart, forbid_unknown_fields=False):
    """One route of this checkout against the same route of the other."""

    route: str
    time: AgainstTimeRecord
    memory: list[MemoryChangeRecord] = msgspec.field(default_factory=list)
    bits: BitsAgreementRecord = BitsAgreementRecord(status="not compared")
    failures: list[str] = msgspec.field(default_factory=list)
    counts: CountChangeRecord | None = None
    regressed: bool = False


class CheckoutComparisonRecord(ResultPart, forbid_unknown_fields=False):
    """The comparison with the other checkout: its sentence and exit status, the routes
    whose bits changed, each route's comparison and the tolerances applied."""

    other: str = ""
    summary: str = ""
    exit_status: int = 0
    bits_changed: list[str] = msgspec.field(default_factory=list)
    fail_on_bits_change: bool = False
    routes: list[RouteAgainstRecord] = msgspec.field(default_factory=list)
    settings: CompareSettings = msgspec.field(default_factory=CompareSettings)

"""RouteVerdictRecord: what a verdict says about one route, as a result keeps it."""

from __future__ import annotations

import msgspec

from topos_cli.result.memory_record import MemoryRecord
from topos_cli.result.result_part import Count, ResultPart
from topos_cli.result.speed_record import SpeedRecord


class FailureRecord(ResultPart, forbid_unknown_fields=False):
    """A run that did not finish cleanly: its repeat, status, detail and NaN step."""

    repeat: Count
    status: str
    detail: str | None = None
    nonfinite_step: Count | None = None


class RouteVerdictRecord(ResultPart, forbid_unknown_fields=False):
    """A route's status, runs, failures, speed and memory."""

    route: str
    status: str
    repeats: Count = 0
    completed: Count = 0
    failures: list[FailureRecord] = msgspec.field(default_factory=list)
    speed: SpeedRecord | None = None
    memory: MemoryRecord | None = None

"""ParityRecord: whether every run's loss bits agree at every step, as a verdict keeps it."""

from __future__ import annotations

import msgspec

from topos_cli.result.divergence_record import DivergenceRecord
from topos_cli.result.result_part import Count, ResultPart


class RunReference(ResultPart, forbid_unknown_fields=False):
    """The run every other run is compared with."""

    route: str
    repeat: Count | None = None


class StoppedRun(ResultPart, forbid_unknown_fields=False):
    """A run that reached fewer steps than the longest, and how many it reached."""

    route: str
    repeat: Count
    steps: Count


class RouteParityRecord(ResultPart, forbid_unknown_fields=False):
    """How one route's runs agree with each other (`repeatable`) and with the reference run
    (`matches_reference`); `None` where there is nothing to compare."""

    route: str
    runs: Count = 0
    repeatable: bool | None = None
    repeat_divergence: DivergenceRecord | None = None
    matches_reference: bool | None = None
    divergence: DivergenceRecord | None = None


class ParityRecord(ResultPart, forbid_unknown_fields=False):
    """`status` (`bit-identical`, `broken`, `not checked`, `incomplete`), the steps that
    agree in every run, the reference run, the earliest divergence, each route's parity and
    the runs that stopped short."""

    status: str
    steps: Count = 0
    runs: Count = 0
    reference: RunReference | None = None
    divergence: DivergenceRecord | None = None
    routes: list[RouteParityRecord] = msgspec.field(default_factory=list)
    stopped_short: list[StoppedRun] = msgspec.field(default_factory=list)

"""PairingRecord: a route's speed and memory against its partner (remat against recorded)."""

from __future__ import annotations

from topos_cli.result.result_part import Ratio, ResultPart
from topos_cli.result.speed_record import SpeedRatioRecord


class PairingRecord(ResultPart, forbid_unknown_fields=False):
    """One route's speed and memory as ratios to its partner's (`pairing.Pairing`)."""

    route: str
    against: str
    speed: SpeedRatioRecord | None = None
    peak_ratio: Ratio | None = None
    training_delta_ratio: Ratio | None = None
    #: Its words (`against recorded: 1.10 ± 0.03x slower, Δ 0.52x`), kept so render reads
    #: them; empty in a result written before they were kept.
    phrase: str = ""

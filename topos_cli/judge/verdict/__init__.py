"""The verdict of a grade: one module per concept, assembled by `decision`.

`run_record` (one run of a route), `parity`, `speed`, `memory`, `noise`
(warnings), `pairing` (remat against recorded), `summary` (the sentence and the
exit status), `settings`; the
README's "Reading a verdict" and "How the measurement works" say what the
figures mean.
"""

from topos_cli.judge.verdict.decision import Verdict, decide_verdict
from topos_cli.judge.verdict.memory import Memory
from topos_cli.judge.verdict.noise import NoiseWarning
from topos_cli.judge.verdict.pairing import Pairing
from topos_cli.judge.verdict.parity import (
    Divergence,
    Parity,
    RouteParity,
    first_divergence,
    judge_parity,
)
from topos_cli.judge.verdict.route_verdict import Failure, RouteVerdict
from topos_cli.judge.verdict.speed import Speed, SpeedRatio
from topos_cli.result.repeat import STATUSES, Repeat
from topos_cli.result.verdict_settings import REFERENCE_ROUTE, VerdictSettings

__all__ = [
    "REFERENCE_ROUTE",
    "STATUSES",
    "Divergence",
    "Failure",
    "Memory",
    "NoiseWarning",
    "Pairing",
    "Parity",
    "Repeat",
    "RouteParity",
    "RouteVerdict",
    "Speed",
    "SpeedRatio",
    "Verdict",
    "VerdictSettings",
    "decide_verdict",
    "first_divergence",
    "judge_parity",
]

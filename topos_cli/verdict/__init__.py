"""The verdict of a grade: one module per concept, assembled by `decision`.

`run_record` (one run of a route), `parity`, `speed`, `memory`, `noise`
(warnings), `pairing` (remat against recorded), `summary` (the sentence and the
exit status), `settings`; the
README's "Reading a verdict" and "How the measurement works" say what the
figures mean.
"""

from topos_cli.verdict.decision import Verdict, decide_verdict
from topos_cli.verdict.memory import Memory
from topos_cli.verdict.noise import NoiseWarning
from topos_cli.verdict.pairing import Pairing
from topos_cli.verdict.parity import Divergence, Parity, RouteParity, check_parity, first_divergence
from topos_cli.verdict.route_verdict import Failure, RouteVerdict
from topos_cli.verdict.run_record import STATUSES, RunRecord
from topos_cli.verdict.settings import REFERENCE_ROUTE, VerdictSettings
from topos_cli.verdict.speed import Speed, SpeedRatio

__all__ = [
    "REFERENCE_ROUTE",
    "STATUSES",
    "Divergence",
    "Failure",
    "Memory",
    "NoiseWarning",
    "Pairing",
    "Parity",
    "RouteParity",
    "RouteVerdict",
    "RunRecord",
    "Speed",
    "SpeedRatio",
    "Verdict",
    "VerdictSettings",
    "check_parity",
    "decide_verdict",
    "first_divergence",
]

"""Pairing: a route judged against another route besides the reference.

The remat route starts where recorded does (the same recorded chain rule, lowered
under a budget), so what it costs and saves is read against recorded as well as
against the reference engine: `remat: ... of engine (against recorded: 1.10x slower,
Δ 0.52x)`. A frontier's remat points (`remat@50%`) pair the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from topos_cli.judge.verdict.route_verdict import RouteVerdict, with_ratios
from topos_cli.judge.verdict.speed import SpeedRatio
from topos_cli.result.pairing_record import PairingRecord
from topos_cli.result.verdict_settings import VerdictSettings

#: Which route a route is also judged against: remat (at any budget) against recorded.
PAIRED_WITH = {"remat": "recorded"}


def partner_of(route: str) -> str | None:
    """The route `route` is also judged against, if any (`remat@50%` counts as remat)."""
    return PAIRED_WITH.get(route.split("@", 1)[0])


@dataclass(frozen=True)
class Pairing:
    """One route's speed and memory as ratios to its partner's."""

    route: str
    against: str
    speed: SpeedRatio | None
    peak_ratio: float | None
    training_delta_ratio: float | None

    @property
    def phrase(self) -> str:
        """E.g. `against recorded: 1.10 ± 0.03x slower, Δ 0.52x`."""
        facts = []
        if self.speed is not None:
            facts.append(self.speed.phrase)
        if self.training_delta_ratio is not None:
            facts.append(f"Δ {self.training_delta_ratio:.2f}x")
        elif self.peak_ratio is not None:
            facts.append(f"{self.peak_ratio:.2f}x the memory")
        return f"against {self.against}: " + (", ".join(facts) if facts else "no figures")

    def record(self) -> PairingRecord:
        """The pairing as a verdict keeps it."""
        return PairingRecord(
            route=self.route,
            against=self.against,
            speed=None if self.speed is None else self.speed.record(),
            peak_ratio=self.peak_ratio,
            training_delta_ratio=self.training_delta_ratio,
            phrase=self.phrase,
        )


def pair_routes(routes: Sequence[RouteVerdict], settings: VerdictSettings) -> tuple[Pairing, ...]:
    """A Pairing for every route whose partner also completed a run."""
    by_name = {route.route: route for route in routes}
    pairings = []
    for route in routes:
        partner = by_name.get(partner_of(route.route) or "")
        if partner is None or route.completed == 0 or partner.completed == 0:
            continue
        judged = with_ratios(route, partner, settings)
        speed, memory = judged.speed, judged.memory
        pairings.append(
            Pairing(
                route=route.route,
                against=partner.route,
                speed=None if speed is None else speed.ratio,
                peak_ratio=None if memory is None else memory.peak_ratio,
                training_delta_ratio=None if memory is None else memory.training_delta_ratio,
            )
        )
    return tuple(pairings)

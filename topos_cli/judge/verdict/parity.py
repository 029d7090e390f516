"""Parity: whether every run's loss bits agree at every step, and where they first part."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgspec

from topos_cli.result.divergence_record import DivergedRun, DivergenceRecord
from topos_cli.result.float_bits import format_bits, ulps_between
from topos_cli.result.json_values import loss_for_json
from topos_cli.result.parity_record import (
    ParityRecord,
    RouteParityRecord,
    RunReference,
    StoppedRun,
)
from topos_cli.result.repeat import Repeat
from topos_cli.result.verdict_settings import REFERENCE_ROUTE


@dataclass(frozen=True)
class Divergence:
    """The first step where one run's loss bits part from another's."""

    step: int
    reference_route: str
    reference_repeat: int
    reference_bits: int
    route: str
    repeat: int
    bits: int
    #: Distance in float32 ulps; `None` when either loss is NaN (not comparable).
    ulps: int | None

    def describe(self, name_repeats: bool = False) -> str:
        """The divergence for people (`DivergenceRecord.describe`: said once, from the
        record a result keeps)."""
        return self._fields().describe(name_repeats)

    def record(self) -> DivergenceRecord:
        """The divergence as a verdict keeps it: bits in hexadecimal, losses as numbers
        (or `"nan"`, `"inf"`), and its sentence."""
        fields = self._fields()
        return msgspec.structs.replace(fields, description=fields.describe(name_repeats=True))

    def _fields(self) -> DivergenceRecord:
        """The record without its sentence."""
        return DivergenceRecord(
            step=self.step,
            reference=DivergedRun(
                route=self.reference_route,
                repeat=self.reference_repeat,
                bits=format_bits(self.reference_bits),
                loss=loss_for_json(self.reference_bits),
            ),
            other=DivergedRun(
                route=self.route,
                repeat=self.repeat,
                bits=format_bits(self.bits),
                loss=loss_for_json(self.bits),
            ),
            ulps=self.ulps,
        )


def first_divergence(reference: Repeat, other: Repeat) -> Divergence | None:
    """The first step, over the steps both runs reached, where their loss bits differ."""
    for step, (expected, actual) in enumerate(
        zip(reference.loss_bits, other.loss_bits, strict=False)
    ):
        if expected != actual:
            return Divergence(
                step=step,
                reference_route=reference.route,
                reference_repeat=reference.repeat,
                reference_bits=expected,
                route=other.route,
                repeat=other.repeat,
                bits=actual,
                ulps=ulps_between(expected, actual),
            )
    return None


def _earliest(divergences: Iterable[Divergence | None]) -> Divergence | None:
    """The divergence at the smallest step (the first such in order on a tie)."""
    found = [divergence for divergence in divergences if divergence is not None]
    return min(found, key=lambda divergence: divergence.step) if found else None


@dataclass(frozen=True)
class RouteParity:
    """How one route's runs agree with each other (A/A) and with the reference run."""

    route: str
    runs: int
    #: Whether this route's repeats agree with each other; `None` with fewer than two.
    repeatable: bool | None
    repeat_divergence: Divergence | None
    #: Whether every run of this route agrees with the reference run; `None` without losses.
    matches_reference: bool | None
    divergence: Divergence | None

    def record(self) -> RouteParityRecord:
        """The route's parity as a verdict keeps it."""
        return RouteParityRecord(
            route=self.route,
            runs=self.runs,
            repeatable=self.repeatable,
            repeat_divergence=_optional_record(self.repeat_divergence),
            matches_reference=self.matches_reference,
            divergence=_optional_record(self.divergence),
        )


@dataclass(frozen=True)
class Parity:
    """Whether every run's loss bits agree at every step.

    `status` is `bit-identical`; `broken` (`divergence` names the earliest
    step where some run parts from the reference run); `not checked` (fewer
    than two runs reported losses); or `incomplete` (no disagreement, but
    some runs, listed in `stopped_short`, reached fewer steps than others).
    """

    status: str
    #: How many leading steps agree in every run that reported losses.
    steps: int
    runs: int
    reference_route: str | None
    reference_repeat: int | None
    divergence: Divergence | None
    routes: tuple[RouteParity, ...]
    #: `(route, repeat, steps reached)` of each run that reached fewer steps than the longest.
    stopped_short: tuple[tuple[str, int, int], ...] = ()

    def record(self) -> ParityRecord:
        """The parity as a verdict keeps it."""
        return ParityRecord(
            status=self.status,
            steps=self.steps,
            runs=self.runs,
            reference=None
            if self.reference_route is None
            else RunReference(route=self.reference_route, repeat=self.reference_repeat),
            divergence=_optional_record(self.divergence),
            routes=[route.record() for route in self.routes],
            stopped_short=[
                StoppedRun(route=route, repeat=repeat, steps=steps)
                for route, repeat, steps in self.stopped_short
            ],
        )


def _optional_record(divergence: Divergence | None) -> DivergenceRecord | None:
    """`divergence.record()`, or `None` for `None`."""
    return None if divergence is None else divergence.record()


def judge_parity(repeats: Sequence[Repeat], reference_route: str = REFERENCE_ROUTE) -> Parity:
    """Compares every run's loss bits with the reference run's, step by step.

    The reference run is the reference route's first run that reported a
    loss (else the first such run of any route). Bit equality is transitive,
    so agreeing with it at every step means all runs agree with each other.
    """
    with_losses = [repeat for repeat in repeats if repeat.loss_bits]
    routes = list(dict.fromkeys(repeat.route for repeat in repeats))
    reference = next(
        (repeat for repeat in with_losses if repeat.route == reference_route),
        with_losses[0] if with_losses else None,
    )
    route_parities = []
    for route in routes:
        route_repeats = [repeat for repeat in with_losses if repeat.route == route]
        repeat_divergence = _earliest(
            first_divergence(route_repeats[0], run) for run in route_repeats[1:]
        )
        divergence = (
            _earliest(first_divergence(reference, run) for run in route_repeats)
            if reference is not None
            else None
        )
        route_parities.append(
            RouteParity(
                route=route,
                runs=len(route_repeats),
                repeatable=None if len(route_repeats) < 2 else repeat_divergence is None,
                repeat_divergence=repeat_divergence,
                matches_reference=None if not route_repeats else divergence is None,
                divergence=divergence,
            )
        )
    divergence = _earliest(route.divergence for route in route_parities)
    compared = min((len(repeat.loss_bits) for repeat in with_losses), default=0)
    longest = max((len(repeat.loss_bits) for repeat in repeats), default=0)
    stopped_short = tuple(
        (repeat.route, repeat.repeat, len(repeat.loss_bits))
        for repeat in repeats
        if len(repeat.loss_bits) < longest
    )
    if divergence is not None:
        status = "broken"
        compared = divergence.step
    elif len(with_losses) < 2:
        status = "not checked"
    elif stopped_short:
        status = "incomplete"
    else:
        status = "bit-identical"
    return Parity(
        status=status,
        steps=compared,
        runs=len(with_losses),
        reference_route=None if reference is None else reference.route,
        reference_repeat=None if reference is None else reference.repeat,
        divergence=divergence,
        routes=tuple(route_parities),
        stopped_short=stopped_short,
    )

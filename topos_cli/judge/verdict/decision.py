"""The verdict of a grade, assembled from its parts: parity, speed, memory, noise, summary.

It is computed in the parent process from the workers' run records, so it
imports neither NumPy nor the library.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from topos.names import is_peer
from topos_cli.judge.statistics import RatioEstimate
from topos_cli.judge.verdict.agreement import PeerAgreement, judge_peers
from topos_cli.judge.verdict.native_agreement import (
    NativeAgreement,
    is_exact,
    is_native,
    judge_native,
    native_causes,
    native_reference,
)
from topos_cli.judge.verdict.noise import (
    NoiseWarning,
    noise_warnings,
    sampled_memory_warning,
)
from topos_cli.judge.verdict.pairing import Pairing, pair_routes
from topos_cli.judge.verdict.parity import Parity, judge_parity
from topos_cli.judge.verdict.route_verdict import RouteVerdict, judge_route, with_ratios
from topos_cli.judge.verdict.summary import exit_status_of, summary_sentence
from topos_cli.judge.verdict.told_apart import routes_told_apart
from topos_cli.result.grade_result import JudgedVerdict
from topos_cli.result.repeat import Repeat
from topos_cli.result.verdict_settings import VerdictSettings


@dataclass(frozen=True)
class Verdict:
    """The grade's conclusion: per-route figures, parity, warnings, summary and exit status."""

    reference: str
    settings: VerdictSettings
    routes: tuple[RouteVerdict, ...]
    parity: Parity
    warnings: tuple[NoiseWarning, ...]
    summary: str
    exit_status: int
    #: Routes judged against a partner besides the reference (remat against recorded).
    pairings: tuple[Pairing, ...] = ()
    #: Peer routes (torch, jax) judged by agreement with topos, apart from bit parity,
    #: and a native workload's compiled routes judged by agreement with its reference.
    agreements: tuple[PeerAgreement | NativeAgreement, ...] = ()

    def route(self, name: str) -> RouteVerdict:
        """The verdict on the route called `name`; raises `KeyError` if none."""
        for route in self.routes:
            if route.route == name:
                return route
        raise KeyError(name)

    def record(self) -> JudgedVerdict:
        """The verdict as a result keeps it: typed records, encoded by the schema, with
        every word and flag render reads (`JudgedVerdict.keeps_every_word`)."""
        return JudgedVerdict(
            settings=self.settings,
            reference=self.reference,
            summary=self.summary,
            exit_status=int(self.exit_status),
            parity=self.parity.record(),
            routes=[route.record() for route in self.routes],
            pairings=[pairing.record() for pairing in self.pairings],
            peers=[
                agreement.record()
                for agreement in self.agreements
                if isinstance(agreement, PeerAgreement)
            ],
            native=[
                agreement.record()
                for agreement in self.agreements
                if isinstance(agreement, NativeAgreement)
            ],
            warnings=[warning.record() for warning in self.warnings],
            told_apart=routes_told_apart(self.routes, self.settings),
        )


def decide_verdict(
    repeats: Iterable[Repeat | Mapping[str, Any]],
    *,
    settings: VerdictSettings | None = None,
    load_average: float | None = None,
    cores: int | None = None,
    known_ratios: Mapping[str, RatioEstimate] | None = None,
) -> Verdict:
    """Judges the runs of a grade: parity, speed, memory, noise, a summary and an exit status.

    `repeats` are `Repeat`s or their dicts, in any order; routes keep
    the order of their first run. `load_average` (the 1-minute figure, read
    when the grade began) and `cores` feed the load warning. The exit status
    follows the README's table; a baseline regression (4) is `compare`'s.
    `known_ratios` are the routes' time ratios to the reference as a result stored them,
    by route: a report's recomputation takes those that still match (`ratio_of_medians`).
    """
    settings = settings or VerdictSettings()
    typed_repeats = [
        repeat if isinstance(repeat, Repeat) else Repeat.from_json(repeat) for repeat in repeats
    ]
    if not typed_repeats:
        raise ValueError("a verdict needs at least one run")
    names = list(dict.fromkeys(run.route for run in typed_repeats))
    judged = [
        judge_route(name, [run for run in typed_repeats if run.route == name], settings)
        for name in names
    ]
    # Without the settings' reference among the routes (`--routes recorded,torch,jax`),
    # the first topos route graded is the reference, as it is for the peers' agreement.
    ours = [name for name in names if not is_peer(name)]
    reference_name = settings.reference if settings.reference in names or not ours else ours[0]
    # A native workload's reference is the step as written (`eager`, `jit`), as its
    # workers name it.
    native = [name for name in names if is_native(typed_repeats, name)]
    if native and settings.reference not in names:
        written = native_reference(typed_repeats)
        reference_name = written if written in native else native[0]
    reference = next((route for route in judged if route.route == reference_name), None)
    known = known_ratios or {}
    routes = tuple(
        with_ratios(route, reference, settings, known.get(route.route)) for route in judged
    )
    # Bit parity is promised among topos's own routes only; peers agree within tolerance.
    # A native workload's compiled routes are judged by agreement, not by bits.
    exact = [
        run
        for run in typed_repeats
        if not is_peer(run.route) and is_exact(typed_repeats, run.route)
    ]
    parity = judge_parity(exact, reference_name)
    agreements = judge_peers(typed_repeats, settings) + judge_native(typed_repeats, reference_name)
    warnings = noise_warnings(routes, settings, load_average, cores)
    sampled = sampled_memory_warning(typed_repeats)
    if sampled is not None:
        warnings.append(sampled)
    pairings = pair_routes(judged, settings)

    return Verdict(
        reference=reference_name,
        settings=settings,
        routes=routes,
        parity=parity,
        warnings=tuple(warnings),
        summary=_with_causes(
            summary_sentence(routes, reference, parity, reference_name, pairings, agreements),
            typed_repeats,
            parity,
        ),
        exit_status=exit_status_of(typed_repeats, parity, agreements),
        pairings=pairings,
        agreements=agreements,
    )


def _with_causes(summary: str, repeats: list[Repeat], parity: Parity) -> str:
    """The summary, with the cause its worker saw named for each native route whose
    bits part from the reference (`native_causes`)."""
    parted = [route.route for route in parity.routes if route.matches_reference is False]
    causes = native_causes(repeats, parted)
    return "; ".join([summary, *causes]) if causes else summary

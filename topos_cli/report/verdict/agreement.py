"""Agreement: how closely a peer route (torch, jax) follows topos, never bit-identity.

A peer computes the same program with other kernels, in other orders, so its losses
agree with topos's to rounding, not to the bit. The verdict gives, per peer route: the
largest relative loss difference `|a - b| / max(|a|, |b|)` over the steps both reached
(against the reference route's first run, else the first topos route's), the first step
where it exceeds the tolerance (`VerdictSettings.peer_loss_tolerance`, 1e-3 by default),
and at step 0 each parameter's gradient's relative error as the peer's worker measured
it (`PeerFacts.gradient_errors`, within `peer_gradient_tolerance`). A peer beyond either
tolerance *diverges*: the grade exits 1 and names where.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from topos.names import is_peer
from topos_cli.result.repeat import Repeat
from topos_cli.result.verdict_settings import VerdictSettings


def relative_difference(first: float, second: float) -> float:
    """`|a - b| / max(|a|, |b|)`: 0 for equal values, infinite where either is NaN."""
    if math.isnan(first) or math.isnan(second):
        return math.inf
    if first == second:
        return 0.0
    return abs(first - second) / max(abs(first), abs(second))


def _figure(value: float) -> str:
    return f"{value:.1e}" if math.isfinite(value) else "inf"


@dataclass(frozen=True)
class PeerAgreement:
    """How one peer route follows topos (see the module). `status` is `agrees`,
    `diverges`, or `not checked` (no topos route's losses to compare with)."""

    route: str
    status: str
    reference_route: str | None
    #: Steps compared (those both runs reached).
    steps: int
    loss_tolerance: float
    gradient_tolerance: float
    largest_difference: float | None = None
    largest_step: int | None = None
    #: The first step whose relative loss difference exceeds the tolerance, and it.
    first_divergence_step: int | None = None
    first_divergence: float | None = None
    #: Step 0's relative gradient error of each parameter, by name.
    gradient_errors: dict[str, float] = field(default_factory=dict)
    #: The parameters whose step-0 gradient error exceeds the tolerance, in order.
    gradients_beyond: tuple[str, ...] = ()

    @property
    def largest_gradient_error(self) -> float | None:
        return max(self.gradient_errors.values()) if self.gradient_errors else None

    def cell(self) -> str:
        """The parity cell: `agrees to 2.1e-07`, or where it diverged."""
        if self.first_divergence_step is not None:
            return (
                f"diverges at step {self.first_divergence_step} ({_figure(self.first_divergence)})"
            )
        if self.gradients_beyond:
            name = self.gradients_beyond[0]
            return f"diverges: gradient {name} ({_figure(self.gradient_errors[name])})"
        if self.status == "not checked":
            gradient = self.largest_gradient_error
            if gradient is None:
                return "not checked"
            return f"not checked (step-0 gradients to {_figure(gradient)})"
        return f"agrees to {_figure(self.largest_difference or 0.0)}"

    def describe(self) -> str:
        """The summary's words about this peer."""
        against = f" {self.reference_route}" if self.reference_route else " topos"
        if self.first_divergence_step is not None:
            return (
                f"{self.route} diverges from{against} at step {self.first_divergence_step}: "
                f"relative loss difference {_figure(self.first_divergence)} > "
                f"{self.loss_tolerance:g}"
            )
        if self.gradients_beyond:
            name = self.gradients_beyond[0]
            return (
                f"{self.route} diverges from topos at step 0: gradient of {name} off by "
                f"{_figure(self.gradient_errors[name])} > {self.gradient_tolerance:g}"
            )
        gradient = self.largest_gradient_error
        gradients = "" if gradient is None else f", step-0 gradients to {_figure(gradient)}"
        if self.status == "not checked":
            return f"{self.route}: losses not compared (no topos route){gradients}"
        return (
            f"{self.route} agrees with{against} to {_figure(self.largest_difference or 0.0)} "
            f"over {self.steps} steps{gradients}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "route": self.route,
            "status": self.status,
            "reference": self.reference_route,
            "steps": self.steps,
            "largest_relative_loss_difference": self.largest_difference,
            "largest_step": self.largest_step,
            "first_divergence_step": self.first_divergence_step,
            "first_divergence": self.first_divergence,
            "loss_tolerance": self.loss_tolerance,
            "gradient_errors": dict(self.gradient_errors),
            "gradient_tolerance": self.gradient_tolerance,
            "gradients_beyond": list(self.gradients_beyond),
            "description": self.describe(),
        }


def _reference(runs: Sequence[Repeat], reference_route: str) -> Repeat | None:
    """The topos run peers are compared with: the reference route's first run with
    losses, else the first topos run with losses."""
    ours = [run for run in runs if not is_peer(run.route) and run.loss_bits]
    return next((run for run in ours if run.route == reference_route), ours[0] if ours else None)


def judge_peers(runs: Sequence[Repeat], settings: VerdictSettings) -> tuple[PeerAgreement, ...]:
    """Every peer route's agreement with topos, in the order the routes first ran."""
    reference = _reference(runs, settings.reference)
    routes = list(dict.fromkeys(run.route for run in runs if is_peer(run.route)))
    judged = []
    for route in routes:
        peer_runs = [run for run in runs if run.route == route]
        errors: dict[str, float] = {}
        for run in peer_runs:
            facts = run.ready.peer if run.ready is not None else None
            if facts is not None and facts.gradient_errors:
                errors = dict(facts.gradient_errors)
                break
        beyond = tuple(
            name for name, error in errors.items() if not error <= settings.peer_gradient_tolerance
        )
        largest = largest_step = first_step = first = None
        steps = 0
        for run in peer_runs:
            if reference is None or not run.loss_bits:
                continue
            pairs = list(zip(reference.losses, run.losses))
            steps = max(steps, len(pairs))
            for step, (ours, theirs) in enumerate(pairs):
                difference = relative_difference(ours, theirs)
                if largest is None or difference > largest:
                    largest, largest_step = difference, step
                if difference > settings.peer_loss_tolerance and (
                    first_step is None or step < first_step
                ):
                    first_step, first = step, difference
                    break
        if first_step is not None or beyond:
            status = "diverges"
        elif largest is None:
            status = "not checked"
        else:
            status = "agrees"
        judged.append(
            PeerAgreement(
                route=route,
                status=status,
                reference_route=None if reference is None else reference.route,
                steps=steps,
                loss_tolerance=settings.peer_loss_tolerance,
                gradient_tolerance=settings.peer_gradient_tolerance,
                largest_difference=largest,
                largest_step=largest_step,
                first_divergence_step=first_step,
                first_divergence=first,
                gradient_errors=errors,
                gradients_beyond=beyond,
            )
        )
    return tuple(judged)

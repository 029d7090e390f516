"""Agreement: how closely a peer route (torch, jax) follows topos, never bit-identity.

A peer computes the same program with other kernels, in other orders, so its losses
agree with topos's to rounding, not to the bit; and training amplifies rounding, so how
far a correct peer parts from topos grows with the run. The verdict judges, per peer
route, against topos's reference run (the reference route's first run, else the first
topos route's):

- **step 0**, the same program on the same parameters and batch, tightly: the relative
  loss difference `|a - b| / max(|a|, |b|)` within `VerdictSettings.peer_loss_tolerance`,
  and each parameter's gradient's error on the model's scale as the peer's worker
  measured it (`PeerFacts.gradient_errors`: the difference's norm over the largest
  parameter gradient's) within `peer_gradient_tolerance`. A wrong emission (a
  sign, a missing term) is off by far more.
- **steps 1 on**, against the drift float32 training itself shows: the peer's worker
  trained the workload again in float64, by topos and by the peer (`PeerFacts.float64`);
  float32's own drift at step t is the larger of topos's float32 losses' relative
  difference from topos's float64 ones and the peer's from the peer's, and its envelope
  the running maximum. Step t agrees while the peer's relative difference is within the
  larger of the step-0 tolerance and `peer_drift_factor` (10) times the envelope. Without
  both float64 trajectories the steps after 0 are *not judged*, never "diverges".

A peer beyond any of these *diverges*: the grade exits 1 and names where.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from topos.names import is_peer
from topos_cli.result.judged_figure import figure, optional_figure
from topos_cli.result.peer_agreement_record import PeerAgreementRecord
from topos_cli.result.repeat import Repeat
from topos_cli.result.verdict_settings import VerdictSettings
from topos_cli.result.worker_facts import Float64Facts


def relative_difference(first: float, second: float) -> float:
    """`|a - b| / max(|a|, |b|)`: 0 for equal values, infinite where either is NaN."""
    if math.isnan(first) or math.isnan(second):
        return math.inf
    if first == second:
        return 0.0
    return abs(first - second) / max(abs(first), abs(second))


def _figure(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value:.1e}" if math.isfinite(value) else "inf"


def _steps(first: int, last: int) -> str:
    return f"step {first}" if first == last else f"steps {first}-{last}"


@dataclass(frozen=True)
class PeerAgreement:
    """How one peer route follows topos (see the module). `status` is `agrees`,
    `diverges`, or `not checked` (no topos route's losses to compare with); `trajectory`
    says how the steps after 0 were judged: `judged` (against float32's own drift), `not
    judged` (`trajectory_reason` says why), or `none` (one step only)."""

    route: str
    status: str
    reference_route: str | None
    #: Steps compared (those both runs reached).
    steps: int
    loss_tolerance: float
    gradient_tolerance: float
    drift_factor: float = 10.0
    #: Step 0's relative loss difference.
    step0_difference: float | None = None
    #: The largest relative loss difference over every step compared, and its step.
    largest_difference: float | None = None
    largest_step: int | None = None
    trajectory: str = "none"
    trajectory_reason: str | None = None
    #: The steps after 0 judged against the drift: 1 to `judged_through`.
    judged_through: int | None = None
    #: The largest relative loss difference after step 0 among those judged, its step, and
    #: float32's drift envelope there.
    later_largest: float | None = None
    later_largest_step: int | None = None
    later_drift: float | None = None
    #: The envelope at the last step judged.
    final_drift: float | None = None
    #: The largest relative difference of the peer's float64 losses from topos's.
    float64_difference: float | None = None
    #: What the float64 trajectories cost (seconds, before the peer's worker was ready).
    float64_seconds: float | None = None
    #: The first step whose relative loss difference exceeds its bound, it, and the bound.
    first_divergence_step: int | None = None
    first_divergence: float | None = None
    first_divergence_bound: float | None = None
    #: Step 0's relative gradient error of each parameter, by name.
    gradient_errors: dict[str, float] = field(default_factory=dict)
    #: The parameters whose step-0 gradient error exceeds the tolerance, in order.
    gradients_beyond: tuple[str, ...] = ()

    @property
    def largest_gradient_error(self) -> float | None:
        return max(self.gradient_errors.values()) if self.gradient_errors else None

    @property
    def step0_figure(self) -> float | None:
        """Step 0's agreement in one figure: the larger of its loss's relative difference
        and its largest gradient error."""
        figures = [f for f in (self.step0_difference, self.largest_gradient_error) if f is not None]
        return max(figures) if figures else None

    def _step0_words(self) -> str:
        parts = []
        if self.step0_difference is not None:
            parts.append(f"loss to {_figure(self.step0_difference)}")
        if self.largest_gradient_error is not None:
            parts.append(f"gradients to {_figure(self.largest_gradient_error)}")
        return ", ".join(parts)

    def cell(self) -> str:
        """The parity cell: `agrees: step 0 to 1.3e-06, then within 10x drift`, or where
        it diverged."""
        if self.first_divergence_step == 0:
            return f"diverges at step 0 ({_figure(self.first_divergence)})"
        if self.gradients_beyond:
            name = self.gradients_beyond[0]
            return f"diverges: gradient {name} ({_figure(self.gradient_errors[name])})"
        if self.first_divergence_step is not None:
            return (
                f"diverges at step {self.first_divergence_step} "
                f"({_figure(self.first_divergence)} > {self.drift_factor:g}x drift)"
            )
        if self.status == "not checked":
            gradient = self.largest_gradient_error
            if gradient is None:
                return "not checked"
            return f"not checked (step-0 gradients to {_figure(gradient)})"
        step0 = _figure(self.step0_figure)
        if self.trajectory == "judged":
            return f"agrees: step 0 to {step0}, then within {self.drift_factor:g}x drift"
        if self.trajectory == "not judged":
            return f"agrees at step 0 ({step0}); later steps not judged"
        return f"agrees to {step0}"

    def describe(self) -> str:
        """The summary's words about this peer: what was judged against what."""
        against = f" {self.reference_route}" if self.reference_route else " topos"
        if self.first_divergence_step == 0:
            return (
                f"{self.route} diverges from{against} at step 0: relative loss difference "
                f"{_figure(self.first_divergence)} > {self.loss_tolerance:g}"
            )
        if self.gradients_beyond:
            name = self.gradients_beyond[0]
            return (
                f"{self.route} diverges from{against} at step 0: gradient of {name} off by "
                f"{_figure(self.gradient_errors[name])} > {self.gradient_tolerance:g}"
            )
        if self.first_divergence_step is not None:
            return (
                f"{self.route} diverges from{against} at step {self.first_divergence_step}: "
                f"relative loss difference {_figure(self.first_divergence)} > "
                f"{_figure(self.first_divergence_bound)}, the larger of "
                f"{self.drift_factor:g}x float32's own drift and the step-0 tolerance "
                f"{self.loss_tolerance:g}"
            )
        step0 = self._step0_words()
        if self.status == "not checked":
            gradients = f", step-0 {step0}" if step0 else ""
            return f"{self.route}: losses not compared (no topos route){gradients}"
        later = ""
        if self.trajectory == "judged" and self.judged_through is not None:
            later = (
                f", {_steps(1, self.judged_through)} within {self.drift_factor:g}x "
                f"float32's own drift (largest {_figure(self.later_largest)} against a "
                f"drift of {_figure(self.later_drift)})"
            )
            if self.judged_through < self.steps - 1:
                later += (
                    f"; {_steps(self.judged_through + 1, self.steps - 1)} not judged: "
                    f"{self.trajectory_reason}"
                )
        elif self.trajectory == "not judged":
            later = f"; {_steps(1, self.steps - 1)} not judged: {self.trajectory_reason}"
        return f"{self.route} agrees with{against}: step 0 ({step0}){later}"

    def record(self) -> PeerAgreementRecord:
        """The agreement as a verdict keeps it (differences infinite where a loss is NaN
        spelled `"inf"`), with the summary's sentence."""
        return PeerAgreementRecord(
            route=self.route,
            status=self.status,
            reference=self.reference_route,
            steps=self.steps,
            step0_relative_loss_difference=optional_figure(self.step0_difference),
            largest_relative_loss_difference=optional_figure(self.largest_difference),
            largest_step=self.largest_step,
            trajectory=self.trajectory,
            trajectory_reason=self.trajectory_reason,
            judged_through_step=self.judged_through,
            later_largest_relative_loss_difference=optional_figure(self.later_largest),
            later_largest_step=self.later_largest_step,
            later_largest_drift=optional_figure(self.later_drift),
            final_drift=optional_figure(self.final_drift),
            drift_factor=self.drift_factor,
            float64_relative_loss_difference=optional_figure(self.float64_difference),
            float64_seconds=self.float64_seconds,
            first_divergence_step=self.first_divergence_step,
            first_divergence=optional_figure(self.first_divergence),
            first_divergence_bound=optional_figure(self.first_divergence_bound),
            loss_tolerance=self.loss_tolerance,
            gradient_errors={name: figure(error) for name, error in self.gradient_errors.items()},
            gradient_tolerance=self.gradient_tolerance,
            gradients_beyond=list(self.gradients_beyond),
            description=self.describe(),
            cell=self.cell(),
        )


def _reference(repeats: Sequence[Repeat], reference_route: str) -> Repeat | None:
    """The topos run peers are compared with: the reference route's first run with
    losses, else the first topos run with losses."""
    ours = [repeat for repeat in repeats if not is_peer(repeat.route) and repeat.loss_bits]
    return next((run for run in ours if run.route == reference_route), ours[0] if ours else None)


def _float64(repeat: Repeat) -> Float64Facts | None:
    ready = repeat.ready
    return None if ready is None or ready.peer is None else ready.peer.float64


@dataclass
class _Trajectory:
    """One peer run's steps after 0 judged against float32's drift."""

    judged_through: int | None = None
    reason: str | None = None
    later_largest: float | None = None
    later_step: int | None = None
    later_drift: float | None = None
    final_drift: float | None = None
    divergence_step: int | None = None
    divergence: float | None = None
    bound: float | None = None


def _missing(facts: Float64Facts | None) -> str | None:
    """Why a run's float64 trajectories cannot measure float32's drift, if they cannot."""
    if facts is None:
        return "no float64 trajectories (a worker older than the drift's judgement)"
    if not facts.topos_losses:
        return f"no float64 twin of topos ({facts.topos_absent or 'not computed'})"
    if not facts.peer_losses:
        return f"no float64 run of the peer ({facts.peer_absent or 'not computed'})"
    return None


def _judge_trajectory(
    ours: Sequence[float],
    theirs: Sequence[float],
    facts: Float64Facts | None,
    settings: VerdictSettings,
) -> _Trajectory:
    """Steps 1 on of one peer run (`theirs`) against topos's (`ours`), within the larger
    of the step-0 tolerance and the drift factor times float32's drift envelope; it stops
    where a float64 trajectory ends or a loss is not finite (the run's own failure)."""
    judged = _Trajectory()
    judged.reason = _missing(facts)
    if judged.reason is not None:
        return judged
    twin, peer64 = facts.topos_losses, facts.peer_losses
    envelope = 0.0
    for step, (our, their) in enumerate(zip(ours, theirs)):
        if step >= len(twin) or step >= len(peer64):
            judged.reason = f"the float64 trajectories end at step {min(len(twin), len(peer64))}"
            break
        if not (math.isfinite(our) and math.isfinite(their)):
            judged.reason = f"a loss is not finite at step {step}"
            break
        drift = max(relative_difference(our, twin[step]), relative_difference(their, peer64[step]))
        envelope = max(envelope, drift)
        if step == 0:
            continue
        difference = relative_difference(our, their)
        bound = max(settings.peer_loss_tolerance, settings.peer_drift_factor * envelope)
        judged.judged_through, judged.final_drift = step, envelope
        if judged.later_largest is None or difference > judged.later_largest:
            judged.later_largest, judged.later_step, judged.later_drift = (
                difference,
                step,
                envelope,
            )
        if difference > bound:
            judged.divergence_step, judged.divergence, judged.bound = step, difference, bound
            break
    return judged


def _float64_difference(facts: Float64Facts | None) -> float | None:
    if facts is None or not facts.topos_losses or not facts.peer_losses:
        return None
    pairs = zip(facts.topos_losses, facts.peer_losses)
    return max(relative_difference(ours, theirs) for ours, theirs in pairs)


def _judge_route(
    route: str, peer_runs: Sequence[Repeat], reference: Repeat | None, settings: VerdictSettings
) -> PeerAgreement:
    errors: dict[str, float] = {}
    for run in peer_runs:
        facts = run.ready.peer if run.ready is not None else None
        if facts is not None and facts.gradient_errors:
            errors = dict(facts.gradient_errors)
            break
    beyond = tuple(
        name for name, error in errors.items() if not error <= settings.peer_gradient_tolerance
    )
    step0 = largest = largest_step = None
    steps = 0
    # The run that decides the trajectory's words: the first that diverges, else the one
    # judged furthest.
    deciding: _Trajectory | None = None
    divergence: tuple[int, float, float] | None = None
    float64_difference = float64_seconds = None
    for run in peer_runs:
        if reference is None or not run.loss_bits:
            continue
        ours, theirs = reference.losses, run.losses
        pairs = list(zip(ours, theirs))
        steps = max(steps, len(pairs))
        for step, (our, their) in enumerate(pairs):
            difference = relative_difference(our, their)
            if largest is None or difference > largest:
                largest, largest_step = difference, step
        first = relative_difference(*pairs[0])
        step0 = first if step0 is None else max(step0, first)
        if first > settings.peer_loss_tolerance and (divergence is None or divergence[0] > 0):
            divergence = (0, first, settings.peer_loss_tolerance)
        facts = _float64(run)
        judged = _judge_trajectory(ours, theirs, facts, settings)
        if judged.divergence_step is not None and (
            divergence is None or judged.divergence_step < divergence[0]
        ):
            divergence = (judged.divergence_step, judged.divergence, judged.bound)
            deciding = judged
        elif deciding is None or (
            deciding.divergence_step is None
            and (judged.judged_through or 0) > (deciding.judged_through or 0)
        ):
            deciding = judged
        difference64 = _float64_difference(facts)
        if difference64 is not None:
            float64_difference = max(float64_difference or 0.0, difference64)
        if facts is not None and float64_seconds is None and facts.topos_seconds is not None:
            float64_seconds = facts.topos_seconds + (facts.peer_seconds or 0.0)
    if divergence is not None or beyond:
        status = "diverges"
    elif largest is None:
        status = "not checked"
    else:
        status = "agrees"
    trajectory, reason = "none", None
    if steps > 1 and deciding is not None:
        trajectory = "judged" if deciding.judged_through is not None else "not judged"
        reason = deciding.reason
    return PeerAgreement(
        route=route,
        status=status,
        reference_route=None if reference is None else reference.route,
        steps=steps,
        loss_tolerance=settings.peer_loss_tolerance,
        gradient_tolerance=settings.peer_gradient_tolerance,
        drift_factor=settings.peer_drift_factor,
        step0_difference=step0,
        largest_difference=largest,
        largest_step=largest_step,
        trajectory=trajectory,
        trajectory_reason=reason,
        judged_through=None if deciding is None else deciding.judged_through,
        later_largest=None if deciding is None else deciding.later_largest,
        later_largest_step=None if deciding is None else deciding.later_step,
        later_drift=None if deciding is None else deciding.later_drift,
        final_drift=None if deciding is None else deciding.final_drift,
        float64_difference=float64_difference,
        float64_seconds=float64_seconds,
        first_divergence_step=None if divergence is None else divergence[0],
        first_divergence=None if divergence is None else divergence[1],
        first_divergence_bound=None if divergence is None else divergence[2],
        gradient_errors=errors,
        gradients_beyond=beyond,
    )


def judge_peers(repeats: Sequence[Repeat], settings: VerdictSettings) -> tuple[PeerAgreement, ...]:
    """Every peer route's agreement with topos, in the order the routes first ran."""
    reference = _reference(repeats, settings.reference)
    routes = list(dict.fromkeys(repeat.route for repeat in repeats if is_peer(repeat.route)))
    return tuple(
        _judge_route(
            route, [repeat for repeat in repeats if repeat.route == route], reference, settings
        )
        for route in routes
    )

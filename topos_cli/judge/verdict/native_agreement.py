"""A native workload's routes (a PyTorch step's variants) judged against its reference.

An *exact* route (checkpointing: the same kernels recomputed on the same inputs) is
promised bit-identical to `eager`, and the bit parity judges it as it judges topos's
routes; where it parts, the cause its worker saw at step 0 is named
(`native_causes`): a random state after the step that is not the reference's (dropout
recomputed without `preserve_rng_state`), or the parameters whose gradients differ.

A compiled route fuses and reorders (`torch.compile`; every JAX route, as XLA compiles
each as a program of its own), so it is judged by *agreement*: every step's loss within
`NATIVE_LOSS_TOLERANCE` (a relative difference `|a - b| / max(|a|, |b|)`) of the
reference's. A route beyond it *diverges*: exit 1. Where every step's loss has the
reference's bits all the same, it is said to be bit-identical (that is measured, not
promised), beside the largest relative error of its step 0 gradients.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from topos_cli.judge.verdict.agreement import relative_difference
from topos_cli.result.judged_figure import optional_figure
from topos_cli.result.native_agreement_record import NativeAgreementRecord
from topos_cli.result.repeat import Repeat
from topos_cli.result.worker_facts import NativeFacts

#: The largest relative difference of a compiled route's loss from the reference's, at
#: any step, that still agrees: float32 reordering moves a loss by some 1e-7 a step, and
#: a few hundred steps of training let it grow; a wrong program moves it by far more.
NATIVE_LOSS_TOLERANCE = 1e-3


def native_facts(repeat: Repeat) -> NativeFacts | None:
    """A repeat's native facts, if it is a native workload's route."""
    ready = repeat.ready
    return None if ready is None else ready.native


def native_reference(repeats: Sequence[Repeat]) -> str | None:
    """The reference route a native workload's workers name (`eager`, `jit`), if any."""
    for repeat in repeats:
        facts = native_facts(repeat)
        if facts is not None:
            return facts.reference
    return None


def is_native(repeats: Sequence[Repeat], route: str) -> bool:
    """Whether `route`'s runs are a native workload's."""
    return any(native_facts(repeat) is not None for repeat in repeats if repeat.route == route)


def is_exact(repeats: Sequence[Repeat], route: str) -> bool:
    """Whether `route` is promised bit-identical to its reference (topos's routes are;
    a native route is when its worker says so)."""
    facts = [native_facts(repeat) for repeat in repeats if repeat.route == route]
    return all(fact is None or fact.exact for fact in facts)


def error_kind(scaled: bool) -> str:
    """What a step 0 gradient error is: on the model's scale (the norm of the difference
    over the largest parameter gradient's norm, `NativeFacts.gradient_scale`), or, from an
    older worker, each parameter's own relative error."""
    return "error on the model's gradient scale" if scaled else "relative error"


def cause_of(facts: NativeFacts) -> str | None:
    """What step 0 showed that explains a route parting from its reference, or None."""
    if facts.rng_matches_reference is False:
        return (
            f"its random state after step 0 is not {facts.reference}'s: it draws random "
            f"numbers differently (dropout recomputed without preserve_rng_state, or a "
            f"compiler's own generator), so its dropout masks differ"
        )
    if facts.differing_gradients:
        errors = facts.gradient_errors
        worst = max(errors, key=lambda name: errors[name], default=None)
        kind = error_kind(facts.gradient_scale is not None)
        largest = f"; largest {kind} {errors[worst]:.2g} ({worst})" if worst else ""
        loss = "the same" if facts.step0_loss_identical else "different"
        return (
            f"at step 0 its loss bits are {loss} but {len(facts.differing_gradients)} of "
            f"{len(errors)} parameters' gradients differ from {facts.reference}'s{largest}"
        )
    if facts.step0_loss_identical is False:
        return f"its step 0 loss already differs from {facts.reference}'s"
    return None


def native_causes(repeats: Sequence[Repeat], parted: Sequence[str]) -> list[str]:
    """For each exact native route in `parted` (routes whose bits part from the
    reference), the clause naming its cause, where its worker saw one."""
    clauses = []
    for route in parted:
        facts = next(
            (
                native_facts(repeat)
                for repeat in repeats
                if repeat.route == route and native_facts(repeat)
            ),
            None,
        )
        if facts is None or not facts.exact:
            continue
        cause = cause_of(facts)
        if cause is not None:
            clauses.append(f"{route} parts from {facts.reference}: {cause}")
    return clauses


@dataclass(frozen=True)
class NativeAgreement:
    """How a compiled native route follows the reference, within `tolerance` (see the
    module); `status` is `agrees`, `diverges` or `not checked`. It reads as a peer's
    agreement does (`cell`, `describe`, `status`), so the table and summary take both."""

    route: str
    reference: str
    status: str
    tolerance: float
    steps: int
    largest_difference: float | None = None
    first_beyond: int | None = None
    cause: str | None = None
    kind: str = "native"
    #: Whether every step's loss had the reference's bits (measured, never promised).
    bit_identical: bool = False
    #: Step 0's largest gradient error against the reference, and its parameter; on the
    #: model's scale where `gradient_scaled` (`error_kind`), else relative.
    largest_gradient_error: float | None = None
    worst_gradient: str | None = None
    gradient_scaled: bool = False
    #: Whether the route's random state after step 0 is not the reference's (a compiler's
    #: own generator draws its dropout masks): why its gradients differ even where it agrees.
    random_state_differs: bool = False

    def cell(self) -> str:
        """The parity column's words for this route."""
        if self.status == "agrees" and self.bit_identical:
            return "bit-identical"
        if self.status == "agrees":
            return f"agrees (≤ {self.tolerance:g})"
        if self.status == "diverges":
            return f"diverges at step {self.first_beyond}"
        return self.status

    def describe(self) -> str:
        """The summary's clause: what was judged against what, and why it parts."""
        difference = f"a relative loss difference of {self.tolerance:g}"
        within = f"within {difference}"
        if self.status == "not checked":
            return f"{self.route} not checked against {self.reference}"
        largest = "" if self.largest_difference is None else f"{self.largest_difference:.2g}"
        gradients = self._gradients()
        if self.status == "agrees" and self.bit_identical:
            return (
                f"{self.route}'s losses are bit-identical to {self.reference}'s over "
                f"{self.steps} steps (compiled as a program of its own, so judged {within}"
                f"{gradients})"
            )
        if self.status == "agrees":
            return (
                f"{self.route} agrees with {self.reference} {within} over {self.steps} "
                f"steps (largest {largest}; compiled, so never promised bit-identical"
                f"{gradients})"
            )
        clause = (
            f"{self.route} diverges from {self.reference} at step {self.first_beyond}, "
            f"beyond {difference} (largest {largest})"
        )
        return clause + (f": {self.cause}" if self.cause else "")

    def _gradients(self) -> str:
        """`; step 0 gradients: largest relative error 3.1e-07 (head)`, where known."""
        if self.largest_gradient_error is None:
            return ""
        if self.largest_gradient_error == 0:
            return "; step 0 gradients bit-identical"
        # Agreeing, a route whose dropout masks are its own has gradients that differ for
        # that reason, not its arithmetic's: said, or the error reads as a fault.
        masks = (
            f", its random state after step 0 not {self.reference}'s: its own generator "
            f"draws its dropout masks"
            if self.random_state_differs and self.status == "agrees"
            else ""
        )
        return (
            f"; step 0 gradients: largest {error_kind(self.gradient_scaled)} "
            f"{self.largest_gradient_error:.2g} ({self.worst_gradient}){masks}"
        )

    def record(self) -> NativeAgreementRecord:
        """The agreement as a verdict keeps it, with the summary's sentence."""
        return NativeAgreementRecord(
            route=self.route,
            reference=self.reference,
            status=self.status,
            tolerance=self.tolerance,
            steps=self.steps,
            largest_difference=optional_figure(self.largest_difference),
            first_beyond=self.first_beyond,
            cause=self.cause,
            bit_identical=self.bit_identical,
            largest_gradient_error=optional_figure(self.largest_gradient_error),
            worst_gradient=self.worst_gradient,
            gradient_scaled=self.gradient_scaled,
            random_state_differs=self.random_state_differs,
            description=self.describe(),
            cell=self.cell(),
        )


def judge_native(repeats: Sequence[Repeat], reference_route: str) -> tuple[NativeAgreement, ...]:
    """Every compiled (not exact) native route's agreement with `reference_route`'s first
    run with losses, in the order the routes first ran."""
    reference = next(
        (repeat for repeat in repeats if repeat.route == reference_route and repeat.loss_bits), None
    )
    routes = list(dict.fromkeys(repeat.route for repeat in repeats))
    judged = []
    for route in routes:
        if route == reference_route or not is_native(repeats, route) or is_exact(repeats, route):
            continue
        theirs = [repeat for repeat in repeats if repeat.route == route and repeat.loss_bits]
        if reference is None or not theirs:
            unchecked = NativeAgreement(
                route, reference_route, "not checked", NATIVE_LOSS_TOLERANCE, steps=0
            )
            judged.append(unchecked)
            continue
        largest, first_beyond, steps = 0.0, None, 0
        identical = all(run.loss_bits == reference.loss_bits for run in theirs)
        for run in theirs:
            for step, (ours, their) in enumerate(zip(reference.losses, run.losses, strict=False)):
                steps = max(steps, step + 1)
                difference = relative_difference(ours, their)
                largest = max(largest, difference)
                if not difference <= NATIVE_LOSS_TOLERANCE and first_beyond is None:
                    first_beyond = step
        facts = native_facts(theirs[0])
        errors = {} if facts is None else facts.gradient_errors
        worst = max(errors, key=lambda name: errors[name], default=None)
        judged.append(
            NativeAgreement(
                route=route,
                reference=reference_route,
                status="agrees" if first_beyond is None else "diverges",
                tolerance=NATIVE_LOSS_TOLERANCE,
                steps=steps,
                largest_difference=largest,
                first_beyond=first_beyond,
                cause=None if first_beyond is None or facts is None else cause_of(facts),
                bit_identical=identical and first_beyond is None,
                largest_gradient_error=None if worst is None else errors[worst],
                worst_gradient=worst,
                gradient_scaled=facts is not None and facts.gradient_scale is not None,
                random_state_differs=facts is not None and facts.rng_matches_reference is False,
            )
        )
    return tuple(judged)

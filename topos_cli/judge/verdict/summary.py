"""The verdict's one sentence, and the exit status its runs and parity give."""

from __future__ import annotations

from collections.abc import Sequence

from topos_cli.judge.verdict.agreement import PeerAgreement
from topos_cli.judge.verdict.pairing import Pairing
from topos_cli.judge.verdict.parity import Parity
from topos_cli.judge.verdict.route_verdict import RouteVerdict
from topos_cli.result.repeat import Repeat
from topos_cli.result.repeat_label import repeat_label
from topos_cli.shared.exit_status import ExitStatus, most_severe
from topos_cli.shared.units import MEBIBYTE, format_milliseconds


def _route_clause(
    route: RouteVerdict,
    reference: RouteVerdict | None,
    reference_name: str,
    say_repeats: bool = True,
    step_tensors: bool = False,
) -> str:
    """The summary's words about one route; `say_repeats` False leaves out what its time
    rests on, when the sentence says it once for every route; `step_tensors` True (a
    native verdict that measured them) judges memory by them alone."""
    if route.completed == 0:
        failure = route.failures[0] if route.failures else None
        detail = _first_line(failure.detail) if failure is not None else None
        return f"{route.route}: {route.status}" + (f" ({detail})" if detail else "")
    facts = []
    speed, memory = route.speed, route.memory
    compared = reference is not None and route.route != reference.route
    ratio = speed.ratio if speed is not None else None
    peak_ratio = memory.peak_ratio if memory is not None else None
    step_ratio = memory.step_tensor_ratio if memory is not None else None
    if compared and step_tensors and (ratio is not None or step_ratio is not None):
        # A native route: its step tensors are its memory; its RSS holds the heap's
        # growth alone (`topos.native.step_tensors`), so no ratio of it is said.
        if ratio is not None:
            word = {"faster": "than", "slower": "than", "same": "of"}.get(
                ratio.direction, "against"
            )
            facts.append(f"{ratio.phrase} {word} {reference_name}")
        if step_ratio is not None:
            facts.append(f"{step_ratio:.2f}x {reference_name}'s step tensors")
        if say_repeats and ratio is not None and ratio.judgement is not None:
            facts.append(f"time on {ratio.judgement.repeats}")
    elif compared and (ratio is not None or peak_ratio is not None):
        if ratio is not None:
            facts.append(ratio.phrase)
        if peak_ratio is not None:
            facts.append(f"{peak_ratio:.2f}x the memory")
        # "1.12x faster than engine", but "1.12x faster, 0.78x the memory of engine".
        speed_last = (
            ratio is not None and peak_ratio is None and ratio.direction in ("faster", "slower")
        )
        claimless = peak_ratio is None and not speed_last and ratio.direction != "same"
        word = "than" if speed_last else "against" if claimless else "of"
        facts[-1] += f" {word} {reference_name}"
        if say_repeats and ratio is not None and ratio.judgement is not None:
            # Every judgement of time says what it rests on.
            facts.append(f"time on {ratio.judgement.repeats}")
    else:
        if speed is not None:
            facts.append(f"{format_milliseconds(speed.milliseconds_per_step.median)} ms/step")
        if memory is not None and memory.peak_rss_bytes is not None:
            facts.append(f"{memory.peak_rss_bytes / MEBIBYTE:.0f} MiB peak")
    clause = f"{route.route}: " + ", ".join(facts) if facts else f"{route.route}: {route.status}"
    if route.failures:
        clause += f" ({len(route.failures)} of {route.repeats} repeats {route.status})"
    return clause


def _first_line(text: str | None, limit: int = 80) -> str | None:
    """The first non-empty line of `text`, shortened to `limit` characters."""
    if not text:
        return None
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _parity_clause(parity: Parity, name_repeats: bool) -> str:
    """The summary's words about parity."""
    if parity.status == "bit-identical":
        return f"losses bit-identical over {parity.steps} steps"
    if parity.status == "not checked" and parity.runs == 0:
        return "parity not checked: no run reported a loss"
    if parity.status == "broken" and parity.divergence is not None:
        divergence = parity.divergence
        if divergence.route == divergence.reference_route:
            return (
                f"{divergence.route} is not repeatable: its losses part at "
                f"{divergence.describe(name_repeats=True)}"
            )
        return f"losses part at {divergence.describe(name_repeats)}"
    short = [
        f"{repeat_label(route, repeat, name_repeats)} "
        + (f"stopped after {steps} steps" if steps else "reported no losses")
        for route, repeat, steps in parity.stopped_short
    ]
    if parity.status == "incomplete":
        return (
            f"parity incomplete: losses bit-identical over the first {parity.steps} steps; "
            + ", ".join(short)
        )
    if short:
        return "parity not checked: " + ", ".join(short)
    return "parity not checked: a single run"


def _nonfinite_clause(routes: Sequence[RouteVerdict]) -> str | None:
    """The summary's words about losses that turned NaN or infinite, if any did."""
    found = [
        f"{route.route} at step {failure.nonfinite_step}"
        for route in routes
        for failure in route.failures
        if failure.status == "nonfinite" and failure.nonfinite_step is not None
    ]
    unique = list(dict.fromkeys(found))
    return f"loss not finite: {', '.join(unique)}" if unique else None


def exit_status_of(
    repeats: Sequence[Repeat], parity: Parity, agreements: Sequence[PeerAgreement] = ()
) -> ExitStatus:
    """The runs' exit status by the README's table: interrupted, parity broken, a run failed.

    A route's time against the reference, even when inconclusive, does not change it:
    grade's exit 0 promises finished routes and agreeing losses, and its route ratios
    are described (the summary says "inconclusive" and why), not gated. The time gate is
    `--baseline` and `compare`, whose inconclusive judgement is exit 5. A peer route that
    diverges beyond its tolerance failed as a route does (1): its program is not topos's."""
    statuses = {repeat.status for repeat in repeats}
    return most_severe(
        (
            ExitStatus.INTERRUPTED if "interrupted" in statuses else None,
            ExitStatus.PARITY_BROKEN if parity.status == "broken" else None,
            ExitStatus.ROUTE_FAILED if statuses - {"ok"} else None,
            ExitStatus.ROUTE_FAILED
            if any(agreement.status == "diverges" for agreement in agreements)
            else None,
        )
    )


def summary_sentence(
    routes: Sequence[RouteVerdict],
    reference: RouteVerdict | None,
    parity: Parity,
    reference_name: str,
    pairings: Sequence[Pairing] = (),
    agreements: Sequence[PeerAgreement] = (),
) -> str:
    """The verdict in one sentence: each route against the reference (and against its
    partner, as remat against recorded), then parity."""
    name_repeats = any(route.repeats > 1 for route in routes)
    others = [route for route in routes if reference is None or route.route != reference.route]
    paired = {pairing.route: pairing for pairing in pairings}
    # Every judgement of time says what it rests on; said once when it is the same for all.
    rests_on = {
        route.speed.ratio.judgement.repeats
        for route in others
        if route.completed
        and route.speed is not None
        and route.speed.ratio is not None
        and route.speed.ratio.judgement is not None
    }
    shared = next(iter(rests_on)) if len(rests_on) == 1 and len(others) > 1 else None
    step_tensors = any(
        route.memory is not None and route.memory.step_tensor_bytes is not None for route in routes
    )
    clauses = []
    for route in others:
        clause = _route_clause(
            route, reference, reference_name, say_repeats=shared is None, step_tensors=step_tensors
        )
        if route.route in paired:
            clause += f" ({paired[route.route].phrase})"
        clauses.append(clause)
    if shared is not None:
        clauses.append(f"time on {shared}")
    if reference is not None and (reference.completed == 0 or not others):
        clauses.insert(0, _route_clause(reference, None, reference_name))
    elif reference is not None and reference.failures:
        # The ratios stand on the reference's completed runs; say that some did not complete.
        count = len(reference.failures)
        clauses.insert(
            0, f"{reference.route}: {count} of {reference.repeats} repeats {reference.status}"
        )
    if parity.runs >= 2 or not agreements:
        clauses.append(_parity_clause(parity, name_repeats))
    clauses.extend(agreement.describe() for agreement in agreements)
    nonfinite = _nonfinite_clause(routes)
    if nonfinite:
        clauses.append(nonfinite)
    return "; ".join(clauses)

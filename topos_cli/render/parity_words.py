"""One route's parity in a few words, the same in the verdict's table and every export:
one judged verdict, worded once (DESIGN.md, "Time verdicts")."""

from __future__ import annotations

from topos_cli.result.parity_record import ParityRecord, RouteParityRecord


def parity_words(route: RouteParityRecord | None, parity: ParityRecord) -> str | None:
    """What parity says about one route (`bit-identical`, `parts at step 3`, `agrees`, ...),
    or None where the route was not compared at all."""
    if route is None or route.runs == 0:
        return None
    if route.repeatable is False and route.repeat_divergence is not None:
        return f"not repeatable (step {route.repeat_divergence.step})"
    if route.matches_reference is False and route.divergence is not None:
        return f"parts at step {route.divergence.step}"
    if parity.status in ("bit-identical", "not checked"):
        return parity.status
    if parity.status == "broken" and route.matches_reference and _compared_whole(route, parity):
        # Another route parts; this one has the reference's bits at every step, and
        # "agrees" is the word for a compiled route within a tolerance.
        return "bit-identical"
    # Broken elsewhere, or incomplete: this route agrees as far as compared.
    return f"agrees to step {parity.steps}" if parity.status == "incomplete" else "agrees"


def _compared_whole(route: RouteParityRecord, parity: ParityRecord) -> bool:
    """Whether every step of `route`'s runs was compared with the reference run: neither
    stopped short of the longest run."""
    short = {run.route for run in parity.stopped_short}
    reference = None if parity.reference is None else parity.reference.route
    return route.route not in short and reference not in short

"""The one sentence `compare` and `grade --against` end on when nothing was judged a
regression, and that never says more than the judgements show.

"No regression beyond 10% on time" is said only when every route's time interval lies
within the tolerance at its upper end (a ratio of at most 1 + tolerance): an interval
reaching 1.20 does not show that there is no regression beyond 10%, and that sentence
says what it allows instead (`no regression shown for engine: its interval 0.92-1.20x
allows up to 20% slower`). An inconclusive time says so, with what it rests on
(`inconclusive for recorded (1.35x, one repeat each: no interval; steps too
disturbed)`). Memory likewise: "no regression beyond 5% on memory" only when every
memory figure's change lies within the tolerance (or under the absolute floor); a change
beyond it whose ranges overlap is said as it is.

The exit status is the judgements' (0 nothing judged a regression, 4 a judged
regression, 5 an inconclusive time); this sentence only words it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from topos_cli.judge.time_judgement import INCONCLUSIVE, SLOWER, TimeJudgement

#: Why an inconclusive time is so, in a few words.
INCONCLUSIVE_WHY = {"disturbed": "steps too disturbed", "thin": "too few repeats"}


@dataclass(frozen=True)
class MemoryFinding:
    """One memory figure of one route as a comparison judged it."""

    route: str
    figure: str
    #: new / old - 1, or `None` when a side did not measure it.
    change: float | None
    #: `regression`, `improvement`, `within tolerance`, `not significant` or `missing`.
    status: str


def ratio_words(judgement: TimeJudgement) -> str:
    """The ratio and what it rests on: `1.12x (0.96-1.16), 3 repeats each`, or without an
    interval where there is none to speak of: `1.35x, one repeat each: no interval`."""
    if judgement.ratio is None:
        return f"no ratio, {judgement.repeats}"
    if judgement.has_interval:
        return f"{judgement.ratio:.2f}x ({judgement.lower:.2f}-{judgement.upper:.2f}), " + (
            judgement.repeats
        )
    return f"{judgement.ratio:.2f}x, {judgement.repeats}: no interval"


def time_clause(route: str, judgement: TimeJudgement) -> str | None:
    """What `route`'s time allows when it does not show "no regression beyond the
    tolerance", or `None` when it does (a judged regression is said elsewhere)."""
    if judgement.outcome == SLOWER:
        return None
    if judgement.outcome == INCONCLUSIVE or not judgement.has_interval:
        why = INCONCLUSIVE_WHY.get(judgement.inconclusive_because or "", "see its reason")
        return f"inconclusive for {route} ({ratio_words(judgement)}; {why})"
    upper = judgement.upper
    if upper is not None and upper > 1.0 + judgement.tolerance:
        return (
            f"no regression shown for {route}: its interval {judgement.lower:.2f}-{upper:.2f}x "
            f"allows up to {upper - 1.0:.0%} slower"
        )
    return None


def memory_clause(finding: MemoryFinding) -> str | None:
    """What a memory figure allows when it does not show "no regression beyond the
    tolerance" (its change beyond it, not shown significant), else `None`."""
    if finding.status != "not significant" or finding.change is None:
        return None
    return (
        f"{finding.route} {finding.figure} {finding.change:+.1%}, not shown to be a "
        "regression (its repeats' ranges overlap)"
    )


def no_regression_sentence(
    times: Sequence[tuple[str, TimeJudgement]],
    memory: Sequence[MemoryFinding],
    time_tolerance: float,
    memory_tolerance: float,
) -> str:
    """E.g. `no regression beyond 10% on time, 5% on memory`, or what the judgements allow
    where they do not show that: `no regression shown for engine: its interval
    0.92-1.20x allows up to 20% slower; no regression beyond 5% on memory`."""
    time_clauses = [c for route, j in times if (c := time_clause(route, j)) is not None]
    memory_clauses = [c for finding in memory if (c := memory_clause(finding)) is not None]
    measured = not memory or any(finding.status != "missing" for finding in memory)
    if not time_clauses and not memory_clauses and measured:
        return (
            f"no regression beyond {time_tolerance:.0%} on time, {memory_tolerance:.0%} on memory"
        )
    parts = time_clauses or [f"no regression beyond {time_tolerance:.0%} on time"]
    if memory and all(finding.status == "missing" for finding in memory):
        memory_clauses = ["memory not measured"]
    parts += memory_clauses or [f"no regression beyond {memory_tolerance:.0%} on memory"]
    return "; ".join(parts)

"""When `grade --repeat auto` stops adding repeats: once every route's time judgement is
decisive, or when the time budget would run out.

A judgement is **decisive** when its interval lies wholly beyond the tolerance (slower
or faster, a claim) or wholly within it (within tolerance: no change). "No clear
difference" and "inconclusive" are not: another round of repeats (every side once,
interleaved) may settle them. The judgements themselves are `time_judgement`'s, the
very ones the verdict then renders: this module only decides whether to ask for more.

The budget is kept, not merely checked: a round is added only when the rounds so far
say it fits (the elapsed time plus the longest round yet stays within the budget).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from topos_cli.judge.time_judgement import FASTER, MIN_REPEATS, SLOWER, WITHIN, TimeJudgement
from topos_cli.shared.bounds import MOST_REPEATS

#: The outcomes that settle a route's time: a claim either way, or no change.
DECISIVE = (SLOWER, FASTER, WITHIN)
#: `--repeat auto` starts with as many repeats as a test needs.
LEAST_REPEATS = MIN_REPEATS

#: Why the repeats stopped.
DECIDED, BUDGET_SPENT, MOST_RAN, RUN_FAILED = "decisive", "budget", "most repeats", "failed"


@dataclass(frozen=True)
class RepeatStop:
    """Why a grade stopped adding repeats (`reason`, one of `DECIDED`, `BUDGET_SPENT`,
    `MOST_RAN`, `RUN_FAILED`), after how many, and in words for the notes."""

    reason: str
    repeats: int
    words: str


def is_decisive(judgement: TimeJudgement) -> bool:
    """Whether `judgement`'s interval settles the route: wholly beyond the tolerance or
    wholly within it."""
    return judgement.outcome in DECISIVE


def undecided(judgements: Mapping[str, TimeJudgement]) -> dict[str, TimeJudgement]:
    """The judgements, by name, that another round might settle."""
    return {name: judgement for name, judgement in judgements.items() if not is_decisive(judgement)}


def stop_repeating(
    judgements: Mapping[str, TimeJudgement],
    *,
    repeats: int,
    elapsed_seconds: float,
    round_seconds: float,
    budget_seconds: float,
    failed: bool = False,
    most_repeats: int = MOST_REPEATS,
) -> RepeatStop | None:
    """Why to stop after `repeats` rounds, or `None` to run another round.

    `judgements` are every route's time judgements so far, by name (a route against its
    reference, against `--baseline`, against `--against`'s checkout); `elapsed_seconds`
    the time the grade's runs have taken, `round_seconds` the longest round yet;
    `failed` whether a run did not complete (more repeats of a failing route help no one).
    """
    if repeats < LEAST_REPEATS:
        return None
    count = f"{repeats} repeat{'s' if repeats != 1 else ''}"
    if failed:
        return RepeatStop(RUN_FAILED, repeats, f"repeats stopped at {count}: a run failed")
    if not judgements:
        return RepeatStop(DECIDED, repeats, f"repeats: {count}, no time judgement to settle")
    open_ones = undecided(judgements)
    if not open_ones:
        return RepeatStop(DECIDED, repeats, f"repeats: {count}, every route's time decisive")
    left = ", ".join(f"{name} ({judgement.outcome})" for name, judgement in open_ones.items())
    if repeats >= most_repeats:
        return RepeatStop(MOST_RAN, repeats, f"repeats: {count}, the most; undecided: {left}")
    if elapsed_seconds + round_seconds > budget_seconds:
        return RepeatStop(
            BUDGET_SPENT,
            repeats,
            f"repeats: {count}, the budget of {budget_seconds:g} s spent; undecided: {left}",
        )
    return None

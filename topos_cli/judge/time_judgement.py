"""Every judgement of time in topos: grade's faster/slower, compare's and history's
regression/improvement, the frontier's "against recorded", the report. One set of rules.

**The unit of evidence is a repeat** (one worker process), not a step: the steps of
one process share its placement, its caches and the load of that minute, so a
thousand steps of one process are one observation of the machine, not a thousand.

**Disturbed steps: the route's own evidence**, screened by `step_screening` (its
docstring has the rules): a step that lost the CPU it needed is left out; a repeat
with fewer than `MIN_STEPS` (5) undisturbed steps is not usable.

**Too disturbed, too thin: inconclusive.** When more than `DISTURBED_LIMIT` (25%) of
a side's measured steps were disturbed, or a side has fewer than `MIN_REPEATS` (3)
usable repeats, no claim is made: the judgement is *inconclusive* and says why.
A result without CPU times (an older topos) has *unknown* disturbance: it is judged on
all its steps and says so, unless its grade warned of a busy machine, which then
makes it inconclusive (nothing can rule the load out).

**Ratio and interval.** A side's figure is the median of its usable repeats'
medians (of undisturbed steps); the ratio is new over old (a route over its
reference), its interval a hierarchical bootstrap and its test Welch's, both in
`statistics` (whose docstring says how).

**The claim.** Slower or faster (regression or improvement) only when the evidence
is enough and quiet, the test's p is below the significance level, *and* the whole
interval lies beyond the tolerance band (a ratio within a factor of 1 + tolerance
either way). When the interval lies wholly within the band: *within tolerance*.
Otherwise: *no clear difference*.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from topos_cli.judge.statistics import CONFIDENCE, RESAMPLES, hierarchical_interval, welch_p_value
from topos_cli.judge.step_screening import MIN_STEPS, SideEvidence, screen_side
from topos_cli.result.repeat import Repeat
from topos_cli.result.time_judgement_record import TimeJudgementRecord

#: A side needs this many usable repeats (worker processes) for a test and a claim.
MIN_REPEATS = 3

#: More than this fraction of a side's measured steps disturbed: inconclusive.
DISTURBED_LIMIT = 0.25

#: The outcomes of a judgement. The first two are claims.
SLOWER, FASTER = "slower", "faster"

WITHIN = "within tolerance"

NO_CLEAR = "no clear difference"

INCONCLUSIVE = "inconclusive"

CLAIMS = (SLOWER, FASTER)


@dataclass(frozen=True)
class TimeJudgement:
    """How one route's time compares with another's (new against old, a route against
    its reference): the ratio of their figures with its interval, the test, the
    outcome and, unless it is a claim, why not."""

    #: new / old (time over time: below 1 is faster).
    ratio: float | None
    lower: float | None
    upper: float | None
    confidence: float
    resamples: int
    tolerance: float
    #: Welch's p on log per-repeat medians; `None` when not tested.
    p_value: float | None
    significance_level: float
    #: One of `SLOWER`, `FASTER`, `WITHIN`, `NO_CLEAR`, `INCONCLUSIVE`.
    outcome: str
    #: Why the outcome is not a claim (or what the claim rests on).
    reason: str
    #: `thin`, `disturbed` or `None`: what made an inconclusive judgement so.
    inconclusive_because: str | None
    new: SideEvidence
    old: SideEvidence

    @property
    def claim(self) -> bool:
        """Whether the judgement claims a difference (slower or faster)."""
        return self.outcome in CLAIMS

    @property
    def tested(self) -> bool:
        """Whether a significance test was made."""
        return self.p_value is not None

    @property
    def repeats(self) -> str:
        """What the judgement rests on: how many repeats ran and, where fewer were usable,
        how many were: `3 repeats each`, `3 and 2 repeats`, `one repeat each, none
        usable`, `3 repeats each, 2 and 3 usable`."""
        ran = (len(self.new.repeats), len(self.old.repeats))
        usable = (len(self.new.usable), len(self.old.usable))
        text = _count_each(ran, "repeat")
        if usable != ran:
            text += ", " + _count_each(usable, "usable")
        return text

    @property
    def has_interval(self) -> bool:
        """Whether the judgement has an interval to speak of: at least two usable repeats
        a side (the repeat is the unit of evidence: the steps of one repeat resampled
        say nothing of the next process's placement and load)."""
        return (
            self.lower is not None
            and self.upper is not None
            and min(len(self.new.usable), len(self.old.usable)) >= 2
        )

    @property
    def test_text(self) -> str:
        """`p = 0.003` or `not tested (fewer than 3 repeats)`."""
        if self.p_value is None:
            return f"not tested (< {MIN_REPEATS} repeats)"
        return f"p = {self.p_value:.2g}"

    def record(self) -> TimeJudgementRecord:
        """The judgement as a verdict keeps it, with its derived words."""
        return TimeJudgementRecord(
            ratio=self.ratio,
            lower=self.lower,
            upper=self.upper,
            confidence=self.confidence,
            resamples=self.resamples,
            tolerance=self.tolerance,
            p_value=self.p_value,
            significance_level=self.significance_level,
            outcome=self.outcome,
            reason=self.reason,
            inconclusive_because=self.inconclusive_because,
            new=self.new.record(),
            old=self.old.record(),
            claim=self.claim,
            repeats_text=self.repeats,
            has_interval=self.has_interval,
            test=self.test_text,
        )


def _count_each(counts: tuple[int, int], noun: str) -> str:
    """`3 repeats each`, `one repeat each`, `no repeats`, `3 and 2 repeats`; for
    `usable`: `2 usable`, `none usable`, `2 and 3 usable`."""
    first, second = counts
    if first != second:
        return f"{first} and {second} {'usable' if noun == 'usable' else noun + 's'}"
    if noun == "usable":
        word = {0: "none", 1: "one"}.get(first, str(first))
        return f"{word} usable"
    if first == 0:
        return f"no {noun}s"
    return f"{'one' if first == 1 else first} {noun}{'s' if first != 1 else ''} each"


def _inadequacy(side: SideEvidence, name: str) -> tuple[str, str] | None:
    """Why a side's evidence is too disturbed or too thin to judge (kind, words), or None."""
    disturbed = side.disturbed
    if disturbed is not None and side.steps and disturbed / side.steps > DISTURBED_LIMIT:
        evidence = side.evidence
        why = f" ({evidence})" if evidence else ""
        return (
            "disturbed",
            f"{name}: {disturbed} of {side.steps} steps disturbed{why}, "
            f"over the {DISTURBED_LIMIT:.0%} limit",
        )
    if disturbed is None and side.busy:
        return "disturbed", f"{name}: {side.busy}, and no CPU times to tell disturbed steps"
    if len(side.usable) < MIN_REPEATS:
        count = len(side.usable)
        usable = f"{count} usable repeat{'s' if count != 1 else ''}"
        if len(side.repeats) >= MIN_REPEATS:
            # Enough repeats ran, but disturbance left too few calm steps in some: grading
            # again on a quieter machine helps, more repeats on this one may not.
            return (
                "disturbed",
                f"{name}: {usable} of {len(side.repeats)} (the others under {MIN_STEPS} "
                f"undisturbed steps), a test needs {MIN_REPEATS}",
            )
        return "thin", f"{name}: {usable}, a test needs {MIN_REPEATS}"
    return None


def judge_time(
    new_runs: Sequence[Repeat],
    old_runs: Sequence[Repeat],
    *,
    tolerance: float,
    significance_level: float = 0.05,
    new_warmup: int = 1,
    old_warmup: int = 1,
    new_busy: str | None = None,
    old_busy: str | None = None,
    names: tuple[str, str] = ("new", "old"),
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> TimeJudgement:
    """Judges the time of `new_runs` against `old_runs` (one route each: a route and its
    reference, or one route in two results) by the module docstring's rules.

    `tolerance` is the band within which a ratio is no change (a factor of 1 +
    tolerance either way); `*_busy` a side's own busy-machine warning; `names` how
    the reasons name the sides. Runs that did not complete are left out.
    """
    new = screen_side(new_runs, new_warmup, new_busy)
    old = screen_side(old_runs, old_warmup, old_busy)
    new_groups = [list(repeat.kept_seconds) for repeat in new.usable]
    old_groups = [list(repeat.kept_seconds) for repeat in old.usable]
    ratio = lower = upper = None
    if new_groups and old_groups:
        try:
            ratio, lower, upper = hierarchical_interval(
                new_groups, old_groups, resamples=resamples, confidence=confidence
            )
        except ZeroDivisionError:
            ratio = lower = upper = None  # a zero median: no ratio to speak of
    if ratio is None:
        # Nothing usable on a side (every step disturbed, say): the ratio of all the
        # measured steps' repeat medians is still said, with no interval and no claim.
        top, bottom = new.all_milliseconds, old.all_milliseconds
        ratio = lower = upper = top / bottom if top is not None and bottom else None
    problems = [
        problem
        for problem in (_inadequacy(new, names[0]), _inadequacy(old, names[1]))
        if problem is not None
    ]
    p_value = None
    if len(new.usable) >= MIN_REPEATS and len(old.usable) >= MIN_REPEATS:
        p_value = welch_p_value(
            [math.log(repeat.median_seconds) for repeat in new.usable if repeat.median_seconds],
            [math.log(repeat.median_seconds) for repeat in old.usable if repeat.median_seconds],
        )
    because = None
    if ratio is None:
        outcome, reason, because = INCONCLUSIVE, "no step times to compare", "thin"
    elif problems:
        # A disturbed side outweighs a thin one: it is the reason to grade again elsewhere.
        kinds = [kind for kind, _ in problems]
        because = "disturbed" if "disturbed" in kinds else "thin"
        outcome, reason = INCONCLUSIVE, "; ".join(words for _, words in problems)
    else:
        band_low, band_high = 1.0 / (1.0 + tolerance), 1.0 + tolerance
        significant = p_value is not None and p_value < significance_level
        if lower > band_high and significant:
            outcome, reason = SLOWER, f"interval beyond +{tolerance:.0%}, p = {p_value:.2g}"
        elif upper < band_low and significant:
            outcome, reason = FASTER, f"interval beyond -{tolerance:.0%}, p = {p_value:.2g}"
        elif band_low <= lower and upper <= band_high:
            outcome, reason = WITHIN, f"interval within ±{tolerance:.0%}"
        else:
            outcome = NO_CLEAR
            reason = (
                f"interval {lower:.3f}-{upper:.3f} reaches within ±{tolerance:.0%}"
                if lower <= band_high and upper >= band_low
                else f"p = {p_value:.2g}, not below {significance_level:g}"
            )
    return TimeJudgement(
        ratio=ratio,
        lower=lower,
        upper=upper,
        confidence=confidence,
        resamples=resamples,
        tolerance=tolerance,
        p_value=p_value,
        significance_level=significance_level,
        outcome=outcome,
        reason=reason,
        inconclusive_because=because,
        new=new,
        old=old,
    )

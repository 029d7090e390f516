"""`topos grade --against`: this checkout against another, route by route.

Both checkouts' runs were made in one grade, interleaved, on the same data, steps,
threads and warm-up, so what differs between them is the code. For each route: the
time ratio (this checkout's median step time over the other's, with its interval), the
memory figures, and whether the two checkouts trained the same loss bits (said either
way, never an error: a change to the library may change the bits on purpose).

Time is judged by the one module that judges all time (`time_judgement`: repeats are the
evidence, disturbed steps are left out, inconclusive where the evidence is too thin or
too disturbed); memory is judged as `compare` judges it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from topos_cli.judge.count_judgement import CountChange, clock_disagreement, judge_counts
from topos_cli.judge.regression_summary import MemoryFinding, no_regression_sentence
from topos_cli.judge.statistics import median
from topos_cli.judge.time_judgement import (
    INCONCLUSIVE,
    NO_CLEAR,
    SLOWER,
    TimeJudgement,
    judge_time,
)
from topos_cli.result.checkout_comparison_record import (
    AgainstTimeRecord,
    BitsAgreementRecord,
    CheckoutComparisonRecord,
    MemoryChangeRecord,
    RouteAgainstRecord,
)
from topos_cli.result.float_bits import format_bits
from topos_cli.result.grade_result import SideCode
from topos_cli.result.instruction_counts import RouteCounts
from topos_cli.result.repeat import Repeat
from topos_cli.result.tolerance import CompareSettings
from topos_cli.shared.exit_status import ExitStatus, most_severe

#: How a run of the other checkout is named: `recorded@against`.
AGAINST_SUFFIX = "@against"

#: Leading measured steps left out of the medians, as the verdict leaves them out.
LEADING_STEPS_LEFT_OUT = 1


def time_phrase(judgement: TimeJudgement) -> str:
    """E.g. `slower: 1.12x the other's time (1.05-1.20), 3 repeats each`, or without an
    interval where fewer than two repeats a side are usable: `inconclusive: 1.35x the
    other's time, one repeat each: no interval`."""
    if judgement.ratio is None:
        return f"time {judgement.outcome}: {judgement.reason}"
    if judgement.has_interval:
        return (
            f"{judgement.outcome}: {judgement.ratio:.2f}x the other's time "
            f"({judgement.lower:.2f}-{judgement.upper:.2f}), {judgement.repeats}"
        )
    return (
        f"{judgement.outcome}: {judgement.ratio:.2f}x the other's time, "
        f"{judgement.repeats}: no interval"
    )


@dataclass(frozen=True)
class MemoryChange:
    """One memory figure of one route in both checkouts (medians over completed runs)."""

    figure: str
    this_bytes: float | None
    other_bytes: float | None
    #: `this / other - 1`, or `None` when undefined.
    change: float | None
    #: `regression`, `improvement`, `within tolerance`, `not significant` (beyond the
    #: tolerance, but the repeats' ranges overlap) or `missing`, as `compare` says it.
    status: str

    def record(self) -> MemoryChangeRecord:
        """The change as a result keeps it: its fields."""
        return MemoryChangeRecord(**asdict(self))


@dataclass(frozen=True)
class BitsAgreement:
    """Whether both checkouts trained the same loss bits on a route."""

    #: `identical`, `different`, or `not compared` (a side has no completed run).
    status: str
    #: The first step whose bits differ, with both patterns, when they differ.
    first_difference: int | None = None
    this_bits: str | None = None
    other_bits: str | None = None

    @property
    def phrase(self) -> str:
        """E.g. `identical loss bits`, `loss bits differ from step 3`."""
        if self.status == "identical":
            return "identical loss bits"
        if self.status == "different":
            return f"loss bits differ from step {self.first_difference}"
        return "loss bits not compared"

    def record(self) -> BitsAgreementRecord:
        """The agreement as a result keeps it: its fields and its phrase."""
        return BitsAgreementRecord(**asdict(self), phrase=self.phrase)


@dataclass(frozen=True)
class RouteAgainst:
    """One route of this checkout against the same route of the other."""

    route: str
    time: TimeJudgement
    memory: tuple[MemoryChange, ...]
    bits: BitsAgreement
    #: Runs that did not finish, on either side, as `route: status` phrases.
    failures: tuple[str, ...] = ()
    #: The counted work per step, the other side against this one (`--measure
    #: instructions`), or None where neither side was counted.
    counts: CountChange | None = None

    @property
    def regressed(self) -> bool:
        """Whether this route is judged worse in this checkout: slower, more memory, or
        more instructions a step (counts judge without the machine's noise)."""
        counted_worse = self.counts is not None and self.counts.status == "regression"
        return (
            self.time.outcome == SLOWER
            or counted_worse
            or any(change.status == "regression" for change in self.memory)
        )

    @property
    def regression_evidence(self) -> str:
        """What found this route worse, e.g. `by its counts: 7.27% more instructions per
        step` where the clock claimed nothing, `1.25x the time` where it did, or `peak RSS
        +12.0%`; empty when it is not a regression."""
        found = []
        if self.time.outcome == SLOWER and self.time.ratio is not None:
            found.append(f"{self.time.ratio:.2f}x the time")
        counts = self.counts
        if counts is not None and counts.status == "regression" and counts.ratio is not None:
            more = f"{counts.ratio - 1.0:.2%} more instructions per step"
            found.append(more if self.time.outcome == SLOWER else f"by its counts: {more}")
        found += [
            f"{change.figure} {change.change:+.1%}"
            for change in self.memory
            if change.status == "regression" and change.change is not None
        ]
        return ", ".join(found)

    @property
    def undecided(self) -> bool:
        """Whether nothing decided this route's speed: its time inconclusive and its
        counts (if any) not judged."""
        counted = self.counts is not None and self.counts.decided
        return self.time.outcome == INCONCLUSIVE and not counted

    @property
    def counts_disagree(self) -> str | None:
        """Where the clock is conclusive and the counts say otherwise, what each says:
        the difference is in what counts cannot see (a sleep, I/O, memory stalls)."""
        return clock_disagreement(self.route, self.time.outcome, self.counts)

    def record(self) -> RouteAgainstRecord:
        """The route's comparison as a result keeps it."""
        judged = self.time.record()
        time = AgainstTimeRecord(
            **{name: getattr(judged, name) for name in judged.__struct_fields__},
            phrase=time_phrase(self.time),
        )
        return RouteAgainstRecord(
            route=self.route,
            time=time,
            memory=[change.record() for change in self.memory],
            bits=self.bits.record(),
            failures=list(self.failures),
            counts=None if self.counts is None else self.counts.record(),
            regressed=self.regressed,
        )


@dataclass(frozen=True)
class CheckoutComparison:
    """This checkout against the other, route by route, with the exit status it implies."""

    other: str
    routes: tuple[RouteAgainst, ...]
    settings: CompareSettings
    #: Whether a change of loss bits fails the gate (`--fail-on-bits-change`: exit 6).
    fail_on_bits_change: bool = False

    @property
    def bits_changed(self) -> tuple[str, ...]:
        """The routes whose loss bits differ from the other checkout's."""
        return tuple(route.route for route in self.routes if route.bits.status == "different")

    @property
    def other_failures(self) -> tuple[str, ...]:
        """The other checkout's runs that did not finish (`engine@against #1: failed`): a
        side whose routes fail is a failed grade, never a time verdict."""
        return tuple(
            failure
            for route in self.routes
            for failure in route.failures
            if failure.split(" #", 1)[0].endswith(AGAINST_SUFFIX)
        )

    @property
    def exit_status(self) -> int:
        """6 when a route's loss bits differ and `fail_on_bits_change`, 4 when a route is
        judged a regression against the other checkout, 5 when a route's time cannot be
        judged (too few or too disturbed repeats), else 0 (a failed run is the grade's own
        exit 1)."""
        regressed = any(route.regressed for route in self.routes)
        # Counts that decided a route settle what its clock could not.
        inconclusive = any(route.undecided for route in self.routes)
        return most_severe(
            (
                ExitStatus.ROUTE_FAILED if self.other_failures else None,
                ExitStatus.BITS_CHANGED if self.fail_on_bits_change and self.bits_changed else None,
                ExitStatus.REGRESSION if regressed else None,
                ExitStatus.INCONCLUSIVE if inconclusive else None,
            )
        )

    @property
    def bits_summary(self) -> str:
        """E.g. `loss bits differ from the other's on engine, recorded (the gate fails on
        it)`, or `loss bits identical to the other's on every route`."""
        changed = self.bits_changed
        if not changed:
            compared = [route for route in self.routes if route.bits.status == "identical"]
            if not compared:
                return "loss bits not compared"
            return "loss bits identical to the other's on every route compared"
        gate = " (--fail-on-bits-change: exit 6)" if self.fail_on_bits_change else ""
        return f"loss bits differ from the other's on {', '.join(changed)}{gate}"

    @property
    def summary(self) -> str:
        """One sentence: the regressions against the other checkout, or what the
        judgements allow (`regression_summary`: "no regression beyond 10%" only when every
        interval's upper end lies within it)."""
        if self.other_failures:
            shown = ", ".join(self.other_failures[:3])
            more = len(self.other_failures) - 3
            shown += f" and {more} more" if more > 0 else ""
            return f"against {self.other}: the other side failed ({shown}): not judged"
        worse = [
            f"{route.route} ({route.regression_evidence})"
            if route.regression_evidence
            else route.route
            for route in self.routes
            if route.regressed
        ]
        if worse:
            return f"against {self.other}: regression in {', '.join(worse)}; {self.bits_summary}"
        sentence = no_regression_sentence(
            [(route.route, route.time) for route in self.routes],
            [
                MemoryFinding(route.route, change.figure, change.change, change.status)
                for route in self.routes
                for change in route.memory
            ],
            self.settings.time_tolerance,
            self.settings.memory_tolerance,
        )
        counted = self.counts_summary
        return f"against {self.other}: {sentence}{counted}; {self.bits_summary}"

    @property
    def counts_summary(self) -> str:
        """`; instructions: engine no change in instructions (+0.01%, within ±1%)`, and
        which routes counts decided where time could not; empty without counts."""
        phrases = [
            f"{route.route} {route.counts.phrase()}"
            for route in self.routes
            if route.counts is not None
        ]
        if not phrases:
            return ""
        decided = [
            route.route
            for route in self.routes
            if route.counts is not None
            and route.counts.decided
            and route.time.outcome in (INCONCLUSIVE, NO_CLEAR)
        ]
        settled = f" (counts decided for {', '.join(decided)})" if decided else ""
        return f"; instructions: {'; '.join(phrases)}{settled}"

    def record(self) -> CheckoutComparisonRecord:
        """The comparison as a result keeps it, with its sentence and exit status."""
        return CheckoutComparisonRecord(
            other=self.other,
            summary=self.summary,
            exit_status=int(self.exit_status),
            bits_changed=list(self.bits_changed),
            fail_on_bits_change=self.fail_on_bits_change,
            routes=[route.record() for route in self.routes],
            settings=self.settings,
        )


def _memory_change(
    figure: str, this: Sequence[int], other: Sequence[int], settings: CompareSettings
) -> MemoryChange:
    """One memory figure judged as `compare` judges it: past the tolerance and the floor,
    and (with two or more runs each) with ranges that do not overlap."""
    mine = float(median(this)) if this else None
    theirs = float(median(other)) if other else None
    if mine is None or theirs is None or theirs <= 0:
        return MemoryChange(figure, mine, theirs, None, "missing")
    change = mine / theirs - 1.0
    status = "within tolerance"
    floor = settings.memory_floor_bytes
    if abs(change) > settings.memory_tolerance and abs(mine - theirs) >= floor:
        separate = True
        if len(this) >= 2 and len(other) >= 2:
            separate = min(this) > max(other) if change > 0 else max(this) < min(other)
        direction = "regression" if change > 0 else "improvement"
        status = direction if separate else "not significant"
    return MemoryChange(figure, mine, theirs, change, status)


def _bits(this: Sequence[Repeat], other: Sequence[Repeat]) -> BitsAgreement:
    """Whether the first completed run of each side trained the same loss bits."""
    if not this or not other:
        return BitsAgreement("not compared")
    mine, theirs = this[0].loss_bits, other[0].loss_bits
    for step, (a, b) in enumerate(zip(mine, theirs, strict=False)):
        if a != b:
            return BitsAgreement("different", step, format_bits(a), format_bits(b))
    if len(mine) != len(theirs):
        return BitsAgreement("different", min(len(mine), len(theirs)))
    return BitsAgreement("identical")


def is_against(repeat: Repeat) -> bool:
    """Whether `repeat` is a repeat of the other checkout."""
    return repeat.route.endswith(AGAINST_SUFFIX)


def compare_checkouts(
    this: Sequence[Repeat],
    other: Sequence[Repeat],
    *,
    other_name: str,
    settings: CompareSettings | None = None,
    fail_on_bits_change: bool = False,
    counts: Sequence[RouteCounts] = (),
) -> CheckoutComparison:
    """This checkout's runs against the other's (named `route@against`), route by route,
    in this checkout's order of routes; a change of loss bits fails the gate if
    `fail_on_bits_change`; `counts` (both sides', by label) are judged where given."""
    counted = {count.route: count for count in counts}
    settings = settings or CompareSettings()
    routes = []
    for route in dict.fromkeys(run.route for run in this):
        mine = [run for run in this if run.route == route]
        theirs = [run for run in other if run.route == route + AGAINST_SUFFIX]
        mine_ok = [run for run in mine if run.status == "ok"]
        theirs_ok = [run for run in theirs if run.status == "ok"]
        failures = tuple(
            f"{run.route} #{run.repeat + 1}: {run.status}"
            for run in (*mine, *theirs)
            if run.status != "ok"
        )
        time = judge_time(
            mine_ok,
            theirs_ok,
            tolerance=settings.time_tolerance,
            significance_level=settings.significance_level,
            new_warmup=LEADING_STEPS_LEFT_OUT,
            old_warmup=LEADING_STEPS_LEFT_OUT,
            names=("this checkout", "the other"),
        )
        memory = tuple(
            _memory_change(
                figure,
                [v for run in mine_ok if (v := getattr(run, attribute)) is not None],
                [v for run in theirs_ok if (v := getattr(run, attribute)) is not None],
                settings,
            )
            for figure, attribute in (
                ("peak RSS", "peak_rss_bytes"),
                ("training delta", "training_delta_bytes"),
            )
        )
        change = None
        if route in counted or route + AGAINST_SUFFIX in counted:
            change = judge_counts(route, counted.get(route + AGAINST_SUFFIX), counted.get(route))
        routes.append(
            RouteAgainst(route, time, memory, _bits(mine_ok, theirs_ok), failures, change)
        )
    return CheckoutComparison(
        other=other_name,
        routes=tuple(routes),
        settings=settings,
        fail_on_bits_change=fail_on_bits_change,
    )


def sides_line(requested: str, sides: Mapping[str, SideCode]) -> str | None:
    """What each side imported, in one line: `code compared: this side's
    mymlp/workloads.py at 9d869100f1d9, main's at 97d62a2fb54a; topos 0.1.0 on both`;
    `None` when a side did not say."""
    this, other = sides.get("this"), sides.get("other")
    if this is None or other is None or this.code is None or other.code is None:
        return None

    def at(side: SideCode) -> str:
        commit = (side.workload_commit or "no commit")[:12]
        return commit + (" (uncommitted changes)" if side.workload_dirty else "")

    module = this.code.workload_module or "the workload"
    if this.code.topos_file == other.code.topos_file:
        topos = f"topos {this.code.topos_version} on both"
    else:
        topos = f"topos {this.code.topos_version} and {other.code.topos_version}, each its own"
    return (
        f"code compared: {module} at {at(this)} (this checkout) against {at(other)} "
        f"({requested}); {topos}"
    )

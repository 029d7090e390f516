"""Every judgement of time in topos: grade's faster/slower, compare's and history's
regression/improvement, the frontier's "against recorded", the report. One set of rules.

**The unit of evidence is a repeat** (one worker process), not a step: the steps of
one process share its placement, its caches and the load of that minute, so a
thousand steps of one process are one observation of the machine, not a thousand.

**Disturbed steps: the route's own evidence.** Each step carries, besides its wall
time, the CPU time of the route (the worker process, all its threads, plus its shard
processes) and the worker's involuntary context switches (preemptions). A step's
*utilisation* is CPU over wall. A route's *quiet level* on one side is the highest,
over that side's repeats, of a repeat's upper-quartile utilisation (a quiet repeat
sets it; up to three quarters of a repeat's steps may be disturbed without moving
it): the processors the route uses when it gets them. A step is **disturbed** when
it lost the CPU it needed:

- its utilisation is below `DISTURBED_UTILISATION` (0.8) of the quiet level (its wall
  time is more than 1.25x what its own CPU time explains, for the threads it uses),
  and it was preempted at least once (`PREEMPTED_SWITCHES`) where switches are known
  (a wait without a preemption is the route's own: a sleep, a read); or
- it got less than one processor's worth (utilisation below 0.8) while preempted at
  least `PREEMPTED_FLOOR` (2) times: every repeat shared a core, so the quiet level
  itself is low; or
- the machine's steal time (a hypervisor's other guests) during its repeat was above
  `STEAL_LIMIT` (5%) of the capacity: the route's clock may count stolen time as its
  own, so the reading is the only evidence, and it disturbs the whole repeat.

Switches are the worker's own; a route with shard processes is judged by utilisation
alone (its worker waits for its shards, voluntarily). Other processes keeping the
machine busy are **not** by themselves a disturbance: a route that had a core to
itself lost nothing. The grader's readings (`facts.machine`: less than
`SATURATED_IDLE` (5%) of the capacity idle while others used at least `OTHERS_CORES`
(0.25) cores) are kept as a note (`RepeatEvidence.machine`) beside the evidence.
Judgement uses the undisturbed steps only; a repeat with fewer than `MIN_STEPS` (5)
undisturbed steps is not usable.

**Too disturbed, too thin: inconclusive.** When more than `DISTURBED_LIMIT` (25%) of
a side's measured steps were disturbed, or a side has fewer than `MIN_REPEATS` (3)
usable repeats, no claim is made: the judgement is *inconclusive* and says why.
A result without CPU times (an older topos) has *unknown* disturbance: it is judged on
all its steps and says so, unless its grade warned of a busy machine, which then
makes it inconclusive (nothing can rule the load out).

**Ratio and interval.** A side's figure is the median of its usable repeats'
medians (of undisturbed steps); the ratio is new over old (a route over its
reference). Its interval is a hierarchical bootstrap, `RESAMPLES` (1000) draws from a
fixed seed: resample the repeats with replacement, then each chosen repeat's steps
with replacement, take each repeat's median and the median of those. The resampled
median of a repeat is drawn exactly and in O(1) (the k-th order statistic of m
uniform draws is Beta(k, m + 1 - k) distributed), so the work is bounded by
resamples times repeats whatever the number of steps.

**The test.** With at least `MIN_REPEATS` usable repeats each, Welch's t-test on the
logarithms of the per-repeat medians (two-sided). Not a rank test: with 3 repeats a
side no exact rank or permutation test can reach p < 0.05 (3 against 3 gives 0.10 at
best), and a per-repeat median of many steps is close to normal; the logarithm makes
the test one of ratios. With fewer repeats: *not tested*.

**The claim.** Slower or faster (regression or improvement) only when the evidence
is enough and quiet, the test's p is below the significance level, *and* the whole
interval lies beyond the tolerance band (a ratio within a factor of 1 + tolerance
either way). When the interval lies wholly within the band: *within tolerance*.
Otherwise: *no clear difference*.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from topos_cli.report.statistics import quantile, quantile_of_sorted
from topos_cli.result.json_fields import JsonFields
from topos_cli.result.repeat import Repeat, RunFacts

#: A side needs this many usable repeats (worker processes) for a test and a claim.
MIN_REPEATS = 3
#: A repeat counts only with at least this many undisturbed measured steps.
MIN_STEPS = 5
#: A step is disturbed below this fraction of the route's quiet CPU utilisation.
DISTURBED_UTILISATION = 0.8
#: ...if it was preempted at least this many times (where the switches are known).
PREEMPTED_SWITCHES = 1
#: Below one processor's worth, a step preempted this often is disturbed whatever the
#: quiet level: a quiet step has 0 to 3 preemptions, a step that shares a core several.
PREEMPTED_FLOOR = 2
#: The quantile of a repeat's per-step utilisation taken as its quiet level.
QUIET_QUANTILE = 0.75
#: More than this fraction of a side's measured steps disturbed: inconclusive.
DISTURBED_LIMIT = 0.25
#: The machine was saturated during a repeat below this idle fraction of its capacity...
SATURATED_IDLE = 0.05
#: ...while other processes used at least this many cores (a note, not a disturbance).
OTHERS_CORES = 0.25
#: Steal time (a hypervisor's other guests) above this fraction of capacity disturbs.
STEAL_LIMIT = 0.05
#: The shortest stretch the machine's readings judge: /proc/stat counts in ticks of 10 ms,
#: so over a few ticks its idle and busy shares are noise, not evidence of other work.
SHORTEST_MACHINE_READING_SECONDS = 0.5
#: Bootstrap draws, confidence and seed: the interval is the same from the same data.
RESAMPLES = 1000
CONFIDENCE = 0.95
SEED = 20260814

#: The outcomes of a judgement. The first two are claims.
SLOWER, FASTER = "slower", "faster"
WITHIN = "within tolerance"
NO_CLEAR = "no clear difference"
INCONCLUSIVE = "inconclusive"
CLAIMS = (SLOWER, FASTER)


@dataclass(frozen=True)
class RepeatEvidence(JsonFields):
    """One repeat's measured steps after screening: how many, how many disturbed, the
    median wall and CPU time of its undisturbed steps (seconds), and whether it counts."""

    repeat: int
    steps: int
    #: `None` when the run recorded no CPU times (disturbance unknown).
    disturbed: int | None
    median_seconds: float | None
    cpu_median_seconds: float | None
    usable: bool
    #: What the machine readings around it say of other processes (context: never by
    #: itself a disturbance), e.g. `machine saturated, others using 1.0 cores`.
    machine: str | None = None
    #: The cores other processes used meanwhile, by the same readings (`None`: unread).
    others_cores: float | None = None
    #: The median of all its measured steps, disturbed or not (described, never judged).
    all_median_seconds: float | None = None
    #: Why every step of it counts as disturbed (steal time), if it does.
    stolen: str | None = None
    #: The evidence of its disturbed steps: their wall seconds, the wall seconds their own
    #: CPU time explains (for the processors the route uses), and their preemptions
    #: (`None` where the switches are unknown).
    disturbed_wall_seconds: float = 0.0
    explained_seconds: float = 0.0
    disturbed_switches: int | None = None
    #: The undisturbed step times, sorted (for the bootstrap; not in the JSON).
    kept_seconds: tuple[float, ...] = field(default=(), repr=False)

    def to_json(self) -> dict[str, Any]:
        """The repeat's figures as a JSON-ready dict (its step times are in the run)."""
        data = asdict(self)
        data.pop("kept_seconds")
        return data


@dataclass(frozen=True)
class SideEvidence(JsonFields):
    """A route's evidence on one side of a judgement: its repeats, screened."""

    repeats: tuple[RepeatEvidence, ...]
    #: Whether every repeat recorded CPU times (else disturbance is unknown).
    disturbance_known: bool
    #: A busy-machine warning of the grade itself (used when disturbance is unknown).
    busy: str | None = None

    @property
    def usable(self) -> tuple[RepeatEvidence, ...]:
        """The repeats that count."""
        return tuple(repeat for repeat in self.repeats if repeat.usable)

    @property
    def steps(self) -> int:
        """Measured steps over all repeats."""
        return sum(repeat.steps for repeat in self.repeats)

    @property
    def disturbed(self) -> int | None:
        """Disturbed steps over all repeats (`None` when unknown)."""
        if not self.disturbance_known:
            return None
        return sum(repeat.disturbed or 0 for repeat in self.repeats)

    @property
    def evidence(self) -> str | None:
        """What showed the disturbed steps lost the CPU, e.g. `wall time 30% beyond what
        their own CPU time explains, 40 involuntary switches` (`None` when no step was
        disturbed)."""
        if not self.disturbed:
            return None
        parts = []
        stolen = sorted({repeat.stolen for repeat in self.repeats if repeat.stolen})
        wall = sum(repeat.disturbed_wall_seconds for repeat in self.repeats)
        explained = sum(repeat.explained_seconds for repeat in self.repeats)
        if explained > 0 and wall > explained:
            beyond = wall / explained - 1.0
            parts.append(f"wall time {beyond:.0%} beyond what their own CPU time explains")
        switches = [repeat.disturbed_switches for repeat in self.repeats if repeat.disturbed]
        if switches and None not in switches:
            count = sum(switches)
            parts.append(f"{count} involuntary switch{'es' if count != 1 else ''}")
        parts += stolen
        return ", ".join(parts) if parts else None

    @property
    def machine_note(self) -> str | None:
        """What the machine readings say of other processes, as context: e.g. `machine
        saturated, others using 1.0 cores (2 of 3 repeats)`; `None` when they say nothing."""
        noted = [repeat for repeat in self.repeats if repeat.machine]
        if not noted:
            return None
        # The busiest reading speaks for the side; the count says how often.
        busiest = max(noted, key=lambda repeat: repeat.others_cores or 0.0)
        return f"{busiest.machine} ({len(noted)} of {len(self.repeats)} repeats)"

    @property
    def milliseconds(self) -> float | None:
        """The side's figure: the median of its usable repeats' medians, in ms."""
        medians = [repeat.median_seconds for repeat in self.usable]
        return _median(medians) * 1000.0 if medians else None

    @property
    def all_milliseconds(self) -> float | None:
        """The median of every repeat's median over all its measured steps, disturbed or
        not, in ms: what the side measured, said when nothing usable is left to judge."""
        medians = [r.all_median_seconds for r in self.repeats if r.all_median_seconds is not None]
        return _median(medians) * 1000.0 if medians else None

    @property
    def cpu_milliseconds(self) -> float | None:
        """The median of its usable repeats' CPU medians (of all repeats' when none is
        usable), in ms (`None` when unknown)."""
        repeats = self.usable or self.repeats
        medians = [r.cpu_median_seconds for r in repeats if r.cpu_median_seconds is not None]
        return _median(medians) * 1000.0 if medians else None

    def describe(self) -> str:
        """E.g. `3 repeats, 4 of 297 steps disturbed` or `1 repeat, disturbance unknown`."""
        count = len(self.usable)
        text = f"{count} repeat{'s' if count != 1 else ''}"
        if len(self.repeats) != count:
            text += f" usable of {len(self.repeats)}"
        if self.disturbed is None:
            return text + ", disturbance unknown"
        return text + f", {self.disturbed} of {self.steps} steps disturbed"


@dataclass(frozen=True)
class TimeJudgement(JsonFields):
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

    def to_json(self) -> dict[str, Any]:
        """The judgement as a JSON-ready dict, with its derived words."""
        data = {
            name: getattr(self, name)
            for name in ("ratio", "lower", "upper", "confidence", "resamples", "tolerance")
        }
        data.update(
            p_value=self.p_value,
            significance_level=self.significance_level,
            outcome=self.outcome,
            reason=self.reason,
            inconclusive_because=self.inconclusive_because,
            new=_side_json(self.new),
            old=_side_json(self.old),
        )
        data.update(
            claim=self.claim,
            repeats_text=self.repeats,
            has_interval=self.has_interval,
            test=self.test_text,
        )
        return data


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


def _median(values: Sequence[float]) -> float:
    return quantile(values, 0.5)


def _number(value: Any) -> float | None:
    """A finite number, or `None`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _machine_shares(facts: RunFacts) -> tuple[float, float, Any] | None:
    """The machine readings around a run (capacity, elapsed, readings), or `None` when
    absent or too brief to judge."""
    machine = facts.machine
    if machine is None:
        return None
    capacity = machine.capacity_seconds
    elapsed = machine.elapsed_seconds
    if not capacity or not elapsed or elapsed < SHORTEST_MACHINE_READING_SECONDS:
        return None
    return capacity, elapsed, machine


def stolen_time(facts: RunFacts) -> str | None:
    """`steal time 8% of the machine` when the hypervisor took more than `STEAL_LIMIT` of
    the machine's capacity during the run (it disturbs every step), else `None`."""
    shares = _machine_shares(facts)
    if shares is None:
        return None
    capacity, _, machine = shares
    steal = machine.steal_seconds
    if steal / capacity > STEAL_LIMIT:
        return f"steal time {steal / capacity:.0%} of the machine"
    return None


def _others_cores(facts: RunFacts) -> float | None:
    """The cores other processes used during the run, by the grader's readings."""
    shares = _machine_shares(facts)
    if shares is None or shares[2].others_cpu_seconds is None:
        return None
    return shares[2].others_cpu_seconds / shares[1]


def machine_saturation(facts: RunFacts) -> str | None:
    """`machine saturated, others using 1.0 cores` when the readings around a run show
    it saturated by other processes, else `None`: context for the route's own evidence,
    never by itself a disturbance (a route with a core to itself lost nothing).

    `facts.machine` holds what the grader read of /proc/stat around the measured steps
    (see the monitor): capacity, idle, steal and others' CPU seconds.
    """
    shares = _machine_shares(facts)
    if shares is None:
        return None
    capacity, elapsed, machine = shares
    idle = machine.idle_seconds
    others = machine.others_cpu_seconds
    saturated = idle is not None and idle / capacity < SATURATED_IDLE
    if saturated and others is not None and others / elapsed >= OTHERS_CORES:
        return f"machine saturated, others using {others / elapsed:.1f} cores"
    return None


def _measured(values: Sequence[Any], warmup: int) -> list[Any]:
    """The measured part of a per-step series (as `Repeat.measured_step_seconds`)."""
    kept = list(values[warmup:])
    return kept if kept else list(values)


def _switches(run: Repeat, warmup: int) -> list[int] | None:
    """The worker's involuntary switches per measured step, or `None` where they cannot
    speak for the route: unrecorded, or a route whose shard processes are not counted."""
    switches = run.step_involuntary_switches
    if len(switches) != len(run.step_seconds):
        return None
    ready = run.facts.ready
    if ready is not None and ready.shard_process_ids:
        return None
    return _measured(switches, warmup)


def screen_side(runs: Sequence[Repeat], warmup: int, busy: str | None = None) -> SideEvidence:
    """One side's evidence: each completed, timed run's steps screened for disturbance
    by the route's own evidence (module docstring); `busy` is the grade's own
    busy-machine warning, if any."""
    timed = [run for run in runs if run.status == "ok" and run.step_seconds]
    series = []
    for run in timed:
        wall = _measured(run.step_seconds, warmup)
        cpu_all = run.step_cpu_seconds
        cpu = _measured(cpu_all, warmup) if len(cpu_all) == len(run.step_seconds) else None
        series.append((run, wall, cpu, _switches(run, warmup)))
    known = bool(series) and all(cpu is not None for _, _, cpu, _ in series)
    quiet = 0.0
    if known:
        for _, wall, cpu, _ in series:
            usage = [c / w for w, c in zip(wall, cpu, strict=True) if w > 0]
            if usage:
                quiet = max(quiet, quantile(usage, QUIET_QUANTILE))
    repeats = []
    for run, wall, cpu, switches in series:
        stolen = stolen_time(run.facts) if known else None
        calm = [True] * len(wall)
        lost_wall = explained = 0.0
        lost_switches: int | None = None
        if known and cpu is not None:
            preemptions: Sequence[int | None] = switches or [None] * len(wall)
            lost_switches = 0 if switches is not None else None
            for index, (w, c, s) in enumerate(zip(wall, cpu, preemptions, strict=True)):
                expected = _lost_cpu(w, c, s, quiet)
                if expected is None and not stolen:
                    continue
                calm[index] = False
                lost_wall += w
                explained += c / (expected or quiet or 1.0)
                if lost_switches is not None and s is not None:
                    lost_switches += s
        kept = [w for w, ok in zip(wall, calm, strict=True) if ok]
        kept_cpu = [c for c, ok in zip(cpu or (), calm, strict=False) if ok] if cpu else []
        repeats.append(
            RepeatEvidence(
                repeat=run.repeat,
                steps=len(wall),
                disturbed=(len(wall) - len(kept)) if known else None,
                median_seconds=_median(kept) if kept else None,
                # With every step disturbed, the CPU of them all is still what a step costs.
                cpu_median_seconds=_median(kept_cpu or cpu) if (kept_cpu or cpu) else None,
                usable=len(kept) >= min(MIN_STEPS, len(wall)) and bool(kept),
                machine=machine_saturation(run.facts),
                others_cores=_others_cores(run.facts),
                all_median_seconds=_median(wall) if wall else None,
                stolen=stolen,
                disturbed_wall_seconds=lost_wall,
                explained_seconds=explained,
                disturbed_switches=lost_switches,
                kept_seconds=tuple(sorted(kept)),
            )
        )
    return SideEvidence(tuple(repeats), known, busy)


def _lost_cpu(wall: float, cpu: float, switches: int | None, quiet: float) -> float | None:
    """The utilisation a step fell short of when it lost the CPU it needed (module
    docstring: below the quiet level and preempted, or below one processor and preempted
    often), or `None` when its own evidence shows no loss."""
    if wall <= 0:
        return None
    utilisation = cpu / wall
    preempted = switches is None or switches >= PREEMPTED_SWITCHES
    if preempted and utilisation < DISTURBED_UTILISATION * quiet:
        return quiet
    floor = switches is not None and switches >= PREEMPTED_FLOOR
    if floor and utilisation < DISTURBED_UTILISATION:
        return 1.0
    return None


def _resampled_median(ordered: Sequence[float], generator: random.Random) -> float:
    """The median of one bootstrap resample (m draws with replacement) of sorted values,
    drawn exactly in O(1): the k-th smallest of m uniforms is Beta(k, m + 1 - k)."""
    count = len(ordered)
    if count == 1:
        return ordered[0]
    k = (count + 1) // 2
    low = generator.betavariate(k, count + 1 - k)
    first = ordered[min(int(low * count), count - 1)]
    if count % 2:
        return first
    # The next order statistic: the smallest of the m - k uniforms above `low`.
    high = low + (1.0 - low) * (1.0 - generator.random() ** (1.0 / (count - k)))
    return (first + ordered[min(int(high * count), count - 1)]) / 2.0


def hierarchical_interval(
    new_steps: Sequence[Sequence[float]],
    old_steps: Sequence[Sequence[float]],
    *,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> tuple[float, float, float]:
    """The ratio of the median of per-repeat medians (new over old) and its percentile
    interval by a hierarchical bootstrap: repeats, then steps within each repeat.
    Each group is one repeat's step times, sorted. Deterministic for a seed."""
    new_groups = [sorted(group) for group in new_steps if group]
    old_groups = [sorted(group) for group in old_steps if group]
    if not new_groups or not old_groups:
        raise ValueError("a ratio needs step times on both sides")
    ratio = _median([_median(g) for g in new_groups]) / _median([_median(g) for g in old_groups])
    generator = random.Random(seed)
    choose = generator.choice
    ratios = []
    # The resamples' medians are of step times already checked finite: the median of
    # each sorted list by `quantile_of_sorted` (the arithmetic of `_median`, so the same
    # interval to the bit) skips `quantile`'s checks, a tenth of this loop's time; the
    # rest is `betavariate`, whose draws fix the interval.
    for _ in range(resamples):
        top = quantile_of_sorted(
            sorted([_resampled_median(choose(new_groups), generator) for _ in new_groups]), 0.5
        )
        bottom = quantile_of_sorted(
            sorted([_resampled_median(choose(old_groups), generator) for _ in old_groups]), 0.5
        )
        if bottom > 0:
            ratios.append(top / bottom)
    if not ratios:
        return ratio, ratio, ratio
    ratios.sort()
    tail = (1.0 - confidence) / 2.0
    lower = min(quantile(ratios, tail), ratio)
    upper = max(quantile(ratios, 1.0 - tail), ratio)
    return ratio, lower, upper


def welch_p_value(first: Sequence[float], second: Sequence[float]) -> float | None:
    """Welch's two-sided t-test p of two samples (at least two values each), or `None`.

    Equal samples with no spread on either side: p = 1 if their means agree, else 0.
    """
    if len(first) < 2 or len(second) < 2:
        return None
    n1, n2 = len(first), len(second)
    m1, m2 = math.fsum(first) / n1, math.fsum(second) / n2
    v1 = math.fsum((x - m1) ** 2 for x in first) / (n1 - 1)
    v2 = math.fsum((x - m2) ** 2 for x in second) / (n2 - 1)
    spread = v1 / n1 + v2 / n2
    if spread == 0.0:
        return 1.0 if m1 == m2 else 0.0
    t = (m1 - m2) / math.sqrt(spread)
    freedom = spread**2 / ((v1 / n1) ** 2 / (n1 - 1) + (v2 / n2) ** 2 / (n2 - 1))
    return _regularized_beta(freedom / (freedom + t * t), freedom / 2.0, 0.5)


def _regularized_beta(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction
    (Lentz's method, as Numerical Recipes' `betai`): the t distribution's two tails."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(x, a, b) / a
    return 1.0 - front * _beta_fraction(1.0 - x, b, a) / b


def _beta_fraction(x: float, a: float, b: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return result


def _side_json(side: SideEvidence) -> dict[str, Any]:
    """A side's evidence as JSON: its repeats, and its figures."""
    return {
        "repeats": [repeat.to_json() for repeat in side.repeats],
        "usable_repeats": len(side.usable),
        "steps": side.steps,
        "disturbed_steps": side.disturbed,
        "disturbance_evidence": side.evidence,
        "machine_note": side.machine_note,
        "disturbance_known": side.disturbance_known,
        "busy": side.busy,
        "milliseconds_per_step": side.milliseconds,
        "cpu_milliseconds_per_step": side.cpu_milliseconds,
    }


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

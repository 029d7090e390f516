"""Which measured steps of a repeat count as evidence of a route's time: the screening
every judgement of time (`time_judgement`) applies to each side first.

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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from topos_cli.judge.statistics import median, quantile
from topos_cli.result.evidence_record import RepeatEvidenceRecord, SideEvidenceRecord
from topos_cli.result.repeat import Repeat, RunFacts

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

#: The machine was saturated during a repeat below this idle fraction of its capacity...
SATURATED_IDLE = 0.05

#: ...while other processes used at least this many cores (a note, not a disturbance).
OTHERS_CORES = 0.25

#: Steal time (a hypervisor's other guests) above this fraction of capacity disturbs.
STEAL_LIMIT = 0.05

#: The shortest stretch the machine's readings judge: /proc/stat counts in ticks of 10 ms,
#: so over a few ticks its idle and busy shares are noise, not evidence of other work.
SHORTEST_MACHINE_READING_SECONDS = 0.5


@dataclass(frozen=True)
class RepeatEvidence:
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

    def record(self) -> RepeatEvidenceRecord:
        """The repeat's figures as a verdict keeps them (its step times are in the run)."""
        fields = asdict(self)
        fields.pop("kept_seconds")
        return RepeatEvidenceRecord(**fields)


@dataclass(frozen=True)
class SideEvidence:
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
        return median(medians) * 1000.0 if medians else None

    @property
    def all_milliseconds(self) -> float | None:
        """The median of every repeat's median over all its measured steps, disturbed or
        not, in ms: what the side measured, said when nothing usable is left to judge."""
        medians = [r.all_median_seconds for r in self.repeats if r.all_median_seconds is not None]
        return median(medians) * 1000.0 if medians else None

    @property
    def cpu_milliseconds(self) -> float | None:
        """The median of its usable repeats' CPU medians (of all repeats' when none is
        usable), in ms (`None` when unknown)."""
        repeats = self.usable or self.repeats
        medians = [r.cpu_median_seconds for r in repeats if r.cpu_median_seconds is not None]
        return median(medians) * 1000.0 if medians else None

    def record(self) -> SideEvidenceRecord:
        """The side's evidence as a verdict keeps it: its repeats, and its figures."""
        return SideEvidenceRecord(
            repeats=[repeat.record() for repeat in self.repeats],
            usable_repeats=len(self.usable),
            steps=self.steps,
            disturbed_steps=self.disturbed,
            disturbance_evidence=self.evidence,
            machine_note=self.machine_note,
            disturbance_known=self.disturbance_known,
            busy=self.busy,
            milliseconds_per_step=self.milliseconds,
            cpu_milliseconds_per_step=self.cpu_milliseconds,
        )

    def describe(self) -> str:
        """E.g. `3 repeats, 4 of 297 steps disturbed` or `1 repeat, disturbance unknown`."""
        count = len(self.usable)
        text = f"{count} repeat{'s' if count != 1 else ''}"
        if len(self.repeats) != count:
            text += f" usable of {len(self.repeats)}"
        if self.disturbed is None:
            return text + ", disturbance unknown"
        return text + f", {self.disturbed} of {self.steps} steps disturbed"


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


def _switches(repeat: Repeat, warmup: int) -> list[int] | None:
    """The worker's involuntary switches per measured step, or `None` where they cannot
    speak for the route: unrecorded, or a route whose shard processes are not counted."""
    switches = repeat.step_involuntary_switches
    if len(switches) != len(repeat.step_seconds):
        return None
    ready = repeat.facts.ready
    if ready is not None and ready.shard_process_ids:
        return None
    return _measured(switches, warmup)


def screen_side(
    side_repeats: Sequence[Repeat], warmup: int, busy: str | None = None
) -> SideEvidence:
    """One side's evidence: each completed, timed run's steps screened for disturbance
    by the route's own evidence (module docstring); `busy` is the grade's own
    busy-machine warning, if any."""
    timed = [repeat for repeat in side_repeats if repeat.status == "ok" and repeat.step_seconds]
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
                median_seconds=median(kept) if kept else None,
                # With every step disturbed, the CPU of them all is still what a step costs.
                cpu_median_seconds=median(kept_cpu or cpu) if (kept_cpu or cpu) else None,
                usable=len(kept) >= min(MIN_STEPS, len(wall)) and bool(kept),
                machine=machine_saturation(run.facts),
                others_cores=_others_cores(run.facts),
                all_median_seconds=median(wall) if wall else None,
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

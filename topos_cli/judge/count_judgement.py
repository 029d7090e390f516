"""Judging counted work: one route's instructions per step against another's.

A count is deterministic: the same code on the same data, with the same kernels,
executes the same instructions per step to well within a tenth of a percent, however
busy the machine. So no test over repeats is needed: a change beyond the tolerance (1%
by default) is a regression or an improvement, a change within it is decisively "no
change". What varies between the counted steps themselves (`RouteCounts.spread`) is the
measure's own noise: a change it could explain is not judged.

Counts of different kernels count different code: two sides whose BLAS kernel or
NumPy SIMD targets differ, or that were counted by different tools, are not compared.
"""

from __future__ import annotations

from dataclasses import dataclass

from topos_cli.result.count_change_record import CountChangeRecord
from topos_cli.result.instruction_counts import RouteCounts

#: The relative change in instructions per step beyond which counted work regresses.
COUNT_TOLERANCE = 0.01


@dataclass(frozen=True)
class CountChange:
    """One route's counted work, the other side against this one: `status` is
    `regression`, `improvement`, `no change` or `not judged` (`reason` says why)."""

    route: str
    status: str
    old: float | None = None
    new: float | None = None
    tolerance: float = COUNT_TOLERANCE
    reason: str | None = None

    @property
    def ratio(self) -> float | None:
        """New instructions per step over old."""
        if self.old is None or self.new is None or not self.old:
            return None
        return self.new / self.old

    @property
    def decided(self) -> bool:
        """Whether counts decided (a regression, an improvement, or no change)."""
        return self.status != "not judged"

    def phrase(self) -> str:
        """`1.9% more instructions per step (regression)`, or why it was not judged."""
        ratio = self.ratio
        if self.status == "not judged" or ratio is None:
            return f"instructions not judged: {self.reason}"
        change = ratio - 1.0
        amount = f"{abs(change):.2%} {'more' if change > 0 else 'fewer'} instructions per step"
        if self.status == "no change":
            return f"no change in instructions ({change:+.2%}, within ±{self.tolerance:.0%})"
        return f"{amount} ({self.status}, beyond ±{self.tolerance:.0%})"

    def record(self) -> CountChangeRecord:
        """The change as a result keeps it, with its sentence."""
        return CountChangeRecord(
            route=self.route,
            status=self.status,
            old_instructions_per_step=self.old,
            new_instructions_per_step=self.new,
            ratio=self.ratio,
            tolerance=self.tolerance,
            reason=self.reason,
            description=self.phrase(),
        )


def judge_counts(
    route: str,
    old: RouteCounts | None,
    new: RouteCounts | None,
    tolerance: float = COUNT_TOLERANCE,
) -> CountChange:
    """The change in `route`'s counted work from `old` to `new` (see the module)."""

    def not_judged(reason: str) -> CountChange:
        return CountChange(route, "not judged", tolerance=tolerance, reason=reason)

    for side, counts in (("old", old), ("new", new)):
        if counts is None:
            return not_judged(f"the {side} side was not counted")
        if counts.status != "counted" or counts.median is None:
            return not_judged(f"the {side} side: {counts.detail or counts.status}")
    assert old is not None and new is not None
    if old.tool != new.tool:
        return not_judged(f"counted by different tools ({old.tool}, {new.tool})")
    if old.kernels != new.kernels:
        return not_judged(
            "different kernels ran under the counter "
            f"({_kernels(old)} against {_kernels(new)}): other code, not comparable"
        )
    old_median, new_median = old.median, new.median
    assert old_median is not None and new_median is not None
    change = new_median / old_median - 1.0
    noise = max(old.spread or 0.0, new.spread or 0.0)
    if abs(change) > tolerance and noise >= abs(change):
        return not_judged(
            f"the counted steps vary by {noise:.2%} themselves, as much as the change"
        )
    if abs(change) <= tolerance:
        status = "no change"
    else:
        status = "regression" if change > 0 else "improvement"
    return CountChange(route, status, old=old_median, new=new_median, tolerance=tolerance)


def _kernels(counts: RouteCounts) -> str:
    blas, simd = counts.kernels
    return f"{blas or 'unknown BLAS'}, NumPy {'/'.join(simd) or 'unknown SIMD'}"


def counts_line(counts: list[RouteCounts], reference: str) -> list[str]:
    """The grade's lines about its counts: instructions per step per route (against the
    reference route's), and every route that was not counted, with why."""
    by_route = {count.route: count for count in counts}
    base = by_route.get(reference)
    figures, lines = [], []
    missing: dict[str, list[str]] = {}
    for count in counts:
        if count.status != "counted" or count.median is None:
            # One line per reason, naming its routes: "no Valgrind" once, not per route.
            missing.setdefault(count.detail or count.status, []).append(count.route)
            continue
        figure = f"{count.route} {count.median / 1e6:.2f} M"
        if base is not None and base is not count and base.median:
            figure += f" ({count.median / base.median:.3f}x {reference})"
        figures.append(figure)
    for reason, routes in missing.items():
        lines.append(f"{', '.join(routes)}: {reason}")
    if figures:
        tool = next(count.tool for count in counts if count.status == "counted")
        steps = len(next(c for c in counts if c.status == "counted").judged_steps)
        lines.insert(
            0,
            f"instructions per step ({tool}, median of {steps} counted steps, one BLAS "
            f"thread): {', '.join(figures)}",
        )
    return lines


#: What counts are blind to, said once wherever counts are shown.
BLIND_SPOTS = (
    "counts see executed instructions only: not a sleep, I/O, waiting for memory, or the "
    "speed-up of parallel threads"
)

#: What the counts say a conclusive clock should have found, by the clock's finding.
_AGREEING = {"slower": "regression", "faster": "improvement"}


def clock_disagreement(route: str, clock: str, counts: CountChange | None) -> str | None:
    """Where the clock is conclusive (`slower` or `faster`, as `time_judgement` words
    it) and the decided counts say otherwise, one line naming both: the difference is
    in what counts cannot see. Both findings stand; neither hides the other. `None` where
    they agree, or either did not decide."""
    if counts is None or not counts.decided or clock not in _AGREEING:
        return None
    if counts.status == _AGREEING[clock]:
        return None
    return (
        f"{route}: {clock} by the clock, yet {counts.phrase()}: the time went where counts "
        "cannot see (a sleep, I/O, waiting for memory, threads)"
    )


def kernel_bits_note(counts: list[RouteCounts], first_bits: dict[str, list[int]]) -> list[str]:
    """A line for each route whose counted steps computed other loss bits than its timed
    runs did (`first_bits`, by route): under Valgrind another kernel ran (it presents a
    CPU without AVX-512), so the counts are of that kernel's code."""
    lines = []
    for count in counts:
        timed = first_bits.get(count.route)
        if count.status != "counted" or not timed or not count.loss_bits:
            continue
        length = min(len(timed), len(count.loss_bits))
        if list(timed[:length]) != list(count.loss_bits[:length]):
            blas, simd = count.kernels
            lines.append(
                f"{count.route}: the counted steps' losses differ from the timed runs' bits: "
                f"under Valgrind other kernels ran ({blas or 'BLAS unknown'}, NumPy "
                f"{'/'.join(simd) or 'SIMD unknown'}), so its counts are of their code"
            )
    return lines

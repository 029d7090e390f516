"""FigureChange: how one figure of one route changed between two results, as
`compare` judges it."""

from __future__ import annotations

from dataclasses import dataclass

from topos_cli.judge.time_judgement import TimeJudgement
from topos_cli.result.comparison_record import FigureChangeRecord


@dataclass(frozen=True)
class FigureChange:
    """How one figure of one route changed between the old result and the new.

    `status` is `regression`, `improvement`, `within tolerance`, `not
    significant` (past the tolerance, but the test or the ranges say it
    may be noise), or `missing` (the figure is absent on one side).
    """

    route: str
    figure: str
    unit: str
    old: float | None
    new: float | None
    #: `new / old - 1`, or `None` when either is missing or the old is not positive.
    change: float | None
    tolerance: float
    p_value: float | None
    significant: bool | None
    status: str
    #: For time, the judgement it comes from (`time_judgement`): repeats, disturbance,
    #: interval and why.
    time: TimeJudgement | None = None

    def record(self) -> FigureChangeRecord:
        """The change as a result keeps it."""
        return FigureChangeRecord(
            route=self.route,
            figure=self.figure,
            unit=self.unit,
            old=self.old,
            new=self.new,
            change=self.change,
            tolerance=self.tolerance,
            p_value=self.p_value,
            significant=self.significant,
            status=self.status,
            time=None if self.time is None else self.time.record(),
        )

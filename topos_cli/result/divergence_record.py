"""DivergenceRecord: the first step where one run's loss bits part from another's."""

from __future__ import annotations

from topos_cli.result.judged_figure import Figure
from topos_cli.result.result_part import Count, ResultPart


class DivergedRun(ResultPart, forbid_unknown_fields=False):
    """One side of a divergence: the run, its loss bits in hexadecimal and its loss (a
    number, or `"nan"`, `"inf"`, `"-inf"`)."""

    route: str
    repeat: Count
    bits: str
    loss: Figure


class DivergenceRecord(ResultPart, forbid_unknown_fields=False):
    """Where two runs' losses first part, how far apart (float32 ulps; `None` when either
    is NaN), and the sentence a person reads."""

    step: Count
    reference: DivergedRun
    other: DivergedRun
    ulps: Count | None = None
    description: str = ""

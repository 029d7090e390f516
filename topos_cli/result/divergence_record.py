"""DivergenceRecord: the first step where one run's loss bits part from another's."""

from __future__ import annotations

from topos_cli.result.float_bits import describe_bits
from topos_cli.result.judged_figure import Figure
from topos_cli.result.repeat_label import repeat_label
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

    def describe(self, name_repeats: bool = False) -> str:
        """The divergence for people, each run named with its repeat where `name_repeats`
        (`description` is this with them named).

        For example `step 7: engine 2.30258512 (40135d8e) vs recorded
        2.30258536 (40135d8f), 1 ulp apart`.
        """
        if self.ulps is None:
            distance = "not comparable (NaN)"
        else:
            distance = f"{self.ulps} ulp{'' if self.ulps == 1 else 's'} apart"
        sides = [
            f"{repeat_label(side.route, side.repeat, name_repeats)} "
            + describe_bits(int(side.bits, 16))
            for side in (self.reference, self.other)
        ]
        return f"step {self.step}: {sides[0]} vs {sides[1]}, {distance}"

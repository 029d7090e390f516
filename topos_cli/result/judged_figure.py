"""Figure: a judged number as a verdict record keeps it, finite or spelled out.

A relative difference is infinite where a loss is NaN, an interval's end infinite where
a time is zero: strict JSON has neither, so a record keeps such a figure as `"nan"`,
`"inf"` or `"-inf"` (as `result_file.json_safe` has always written them), and reading
one back accepts exactly those three words beside a finite number.
"""

from __future__ import annotations

import math
from typing import Literal

from topos_cli.result.result_part import Ratio

#: A finite number, or one of the three words strict JSON spells the others with.
Figure = Ratio | Literal["nan", "inf", "-inf"]


def figure(value: float) -> float | str:
    """`value` as a record keeps it: itself when finite, else `"nan"`, `"inf"`, `"-inf"`."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def optional_figure(value: float | None) -> float | str | None:
    """`figure(value)`, or `None` for `None`."""
    return None if value is None else figure(value)

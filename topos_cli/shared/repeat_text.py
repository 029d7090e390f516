"""`--repeat` as typed: a number of repeats a route, or `auto` (repeats added until the
time verdict is clear, within a time budget: `auto:20m`, `auto:600s`, `auto:90`)."""

from __future__ import annotations

from topos_cli.shared.bounds import MOST_REPEATS, check_count
from topos_cli.shared.errors import ToposUsageError

#: How long `--repeat auto` may keep adding repeats when no budget is named: ten minutes,
#: a pull request's gate that still answers within a CI job's patience.
DEFAULT_REPEAT_BUDGET_SECONDS = 600.0
#: What `--repeat` accepts, for help texts and error messages.
REPEAT_SYNTAX = "a number of repeats, auto, or auto:BUDGET (auto:20m, auto:600s)"

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_repeat(text: str) -> tuple[int | None, float | None]:
    """A fixed number of repeats a route, `(count, None)`; or for `auto`, `(None, budget)`
    with the time budget in seconds; a usage error (one line, exit 2) otherwise."""
    written = text.strip().lower()
    if written == "auto":
        return None, DEFAULT_REPEAT_BUDGET_SECONDS
    if written.startswith("auto:"):
        return None, _budget_seconds(text, written[len("auto:") :])
    try:
        count = int(written)
    except ValueError:
        raise ToposUsageError(f"--repeat {text!r}: expected {REPEAT_SYNTAX}") from None
    return check_count("--repeat", count, most=MOST_REPEATS), None


def _budget_seconds(text: str, budget: str) -> float:
    """`auto:BUDGET`'s budget in seconds: a positive number with an optional s, m or h."""
    unit = _UNITS.get(budget[-1:])
    number = budget[:-1] if unit is not None else budget
    try:
        seconds = float(number) * (unit or 1.0)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise ToposUsageError(
            f"--repeat {text!r}: the budget must be a positive time, e.g. auto:20m or auto:600s"
        )
    return seconds

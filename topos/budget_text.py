"""Budget text: a remat budget as people write it, read without NumPy.

`64MiB`, `7000000B`, `6.5MB` (bytes with a unit), `50%` (a share of the recorded
route's planned bytes), `floor`, or `floor+50%` (the floor plus a share of the way from
the floor up to the recorded route's planned bytes: never below the floor, whatever the
workload). NumPy-free on purpose, like `topos.names`: the
grading parent refuses a bad `--budget` before any worker starts.
"""

from __future__ import annotations

import re

#: Bytes per unit; binary and decimal units both mean what they say.
UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
}

#: The largest budget in bytes (an exbibyte): no plan comes near, and every budget below
#: it is a finite float and a plain int.
MOST_BYTES = 2**60
#: The largest share of the recorded route's planned bytes (above 100% remat plans as
#: recorded does; far above, a typo).
MOST_PERCENT = 10_000
#: The longest budget text read: a number no longer than this cannot overflow a float.
MOST_CHARACTERS = 64

_SIZE = re.compile(r"(?P<number>\d+(\.\d*)?|\.\d+)\s*(?P<unit>[A-Za-z]+)")
_SHARE = re.compile(r"(?P<number>\d+(\.\d*)?|\.\d+)\s*%")


class BudgetTextError(ValueError):
    """Budget text that names no budget; the message says why in one line."""


#: `floor+50%`: the floor, plus a share of the way up to the unconstrained plan.
_ABOVE_FLOOR = re.compile(r"floor\s*\+\s*(?P<share>.+)", re.IGNORECASE)


def parse_budget(text: str, name: str = "--budget") -> int | float | str | tuple[str, float]:
    """What `text` names: bytes (an int, at most `MOST_BYTES`), a fraction (a float:
    `50%` is 0.5, at most `MOST_PERCENT`%), `"floor"`, or `("floor", fraction)` for
    `floor+50%` (the fraction of the way from the floor to the unconstrained plan, 0 to
    1); BudgetTextError (one line) for anything else, a number out of bounds included.
    `name` is what the message calls the budget: the command's `--budget` by default,
    `budget` for the library's `Entry.lower`."""
    cleaned = text.strip()
    if cleaned.lower() == "floor":
        return "floor"
    if len(cleaned) > MOST_CHARACTERS:
        # Before any number is read: 400 nines overflow a float to infinity.
        raise BudgetTextError(
            f"{name} {cleaned[:20]}...: longer than {MOST_CHARACTERS} characters; "
            f"no budget needs so many digits"
        )
    above = _ABOVE_FLOOR.fullmatch(cleaned)
    if above:
        share = _SHARE.fullmatch(above["share"].strip())
        fraction = None if share is None else float(share["number"]) / 100
        if fraction is None or fraction > 1:
            raise BudgetTextError(
                f"{name} {text!r}: above the floor, give a percentage from 0% to 100% "
                f"of the way to the recorded route's planned bytes (floor+50%)"
            )
        return ("floor", fraction)
    share = _SHARE.fullmatch(cleaned)
    if share:
        fraction = float(share["number"]) / 100
        if fraction <= 0:
            raise BudgetTextError(f"{name} {text!r}: a share must be above 0%")
        if not fraction <= MOST_PERCENT / 100:
            raise BudgetTextError(f"{name} {text!r}: a share must be at most {MOST_PERCENT}%")
        return fraction
    size = _SIZE.fullmatch(cleaned)
    if size:
        unit = UNITS.get(size["unit"].upper())
        if unit is None:
            raise BudgetTextError(
                f"{name} {text!r}: unknown unit {size['unit']!r}; "
                f"use B, KB, MB, GB, KiB, MiB or GiB"
            )
        amount = float(size["number"]) * unit
        if not amount <= MOST_BYTES:  # also refuses infinity
            raise BudgetTextError(
                f"{name} {text!r}: a budget must be at most {MOST_BYTES} bytes (1 EiB)"
            )
        count = int(amount)
        if count <= 0:
            raise BudgetTextError(f"{name} {text!r}: a budget must be above 0 bytes")
        return count
    raise BudgetTextError(
        f"{name} {text!r}: give bytes with a unit (64MiB), a percentage of the recorded "
        f"route's planned bytes (50%), floor, or floor+50%"
    )

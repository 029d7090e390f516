"""The exit statuses of `topos`, and which one wins when several apply.

The README's exit-status table is where they are documented; this module
keeps them and their precedence in one place for the code.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class ExitStatus(IntEnum):
    """The process exit statuses of `topos`, one per kind of outcome."""

    OK = 0
    ROUTE_FAILED = 1
    USAGE = 2
    PARITY_BROKEN = 3
    REGRESSION = 4
    #: The time verdict could not be made: its steps too disturbed (a busy machine) or
    #: its repeats too few. Never worse than a judged regression, never over a failure.
    INCONCLUSIVE = 5
    #: `grade --against REF --fail-on-bits-change`: a route's loss bits differ from REF's.
    BITS_CHANGED = 6
    INTERRUPTED = 130


#: When several statuses apply, the first of these wins (the README's table says why).
PRECEDENCE = (
    ExitStatus.INTERRUPTED,
    ExitStatus.USAGE,
    ExitStatus.PARITY_BROKEN,
    ExitStatus.ROUTE_FAILED,
    ExitStatus.BITS_CHANGED,
    ExitStatus.REGRESSION,
    ExitStatus.INCONCLUSIVE,
    ExitStatus.OK,
)


def most_severe(statuses: Iterable[int | None]) -> ExitStatus:
    """The status that wins among `statuses` (`None`s ignored); `OK` when none apply."""
    present = {status for status in statuses if status is not None}
    return next((status for status in PRECEDENCE if status in present), ExitStatus.OK)

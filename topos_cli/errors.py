"""The errors `topos` reports to people, each with the exit status it ends in.

Exit statuses are distinct so CI can tell failures apart (see `ExitStatus`).
An error raised from these classes is shown as one line naming the problem,
never as a traceback.
"""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """The process exit statuses of `topos`, one per kind of outcome."""

    OK = 0
    ROUTE_FAILED = 1
    USAGE = 2
    PARITY_BROKEN = 3
    REGRESSION = 4
    INTERRUPTED = 130


class ToposError(Exception):
    """A failure `topos` explains in one line; `exit_status` says how the process ends."""

    exit_status: int = ExitStatus.ROUTE_FAILED


class ToposUsageError(ToposError):
    """A usage or data error: a bad option, an unreadable or foreign file. Exit 2."""

    exit_status = ExitStatus.USAGE


class ResultFileError(ToposUsageError):
    """A result file that cannot be read, is not a topos result, or has another schema."""


class IncomparableResultsError(ToposUsageError):
    """Two results that cannot be compared: another schema or another workload."""

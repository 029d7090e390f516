"""The errors `topos` reports to people, each with the exit status it ends in.

Each error carries its exit status (`topos_cli.shared.exit_status`; the README's
table documents them). An error raised from these classes is shown as one line naming the problem,
never as a traceback.
"""

from __future__ import annotations

from topos_cli.shared.exit_status import ExitStatus

__all__ = [
    "ExitStatus",
    "IncomparableResultsError",
    "ResultFileError",
    "ToposError",
    "ToposUsageError",
]


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

"""The bounds of every number a command line gives, checked in the parent before any work.

A number is refused in one line naming its option (exit 2) when it is not a whole
number where one is meant, is not finite, or lies outside what a run could sensibly
ask: far beyond any real use, but well within what the parent can hold. Unbounded, a
typo grew the grading parent to 24 GB (`--repeat 100000000` planned one run record per
repeat before the first worker started).
"""

from __future__ import annotations

from topos_cli.shared.errors import ToposUsageError

#: Training steps of one run: a million steps of even the smallest workload is days.
MOST_STEPS = 1_000_000
#: Runs of each route in one grade: each run is a worker process started in turn.
MOST_REPEATS = 1_000
#: BLAS/OpenMP threads in one worker.
MOST_THREADS = 1_024
#: Rows a check differentiates and random directions per parameter.
MOST_CHECK_ROWS = 100_000
MOST_DIRECTIONS = 10_000
#: A seed is a 64-bit unsigned integer (splitmix64's state).
MOST_SEED = 2**64 - 1


def check_count(option: str, value: object, *, most: int, least: int = 1) -> int:
    """`value` if it is a whole number from `least` to `most`; `ToposUsageError` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        shown = value if not isinstance(value, int) or abs(value) < 10**30 else "a huge number"
        raise ToposUsageError(
            f"{option} must be a whole number from {least} to {most:,}, not {shown}"
        )
    return value


def check_seconds(option: str, value: object) -> float:
    """`value` if it is a positive number of seconds (infinity, or a number beyond any clock,
    means no limit); `ToposUsageError` otherwise, nan included."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ToposUsageError(f"{option} must be a positive number of seconds, not {value}")
    return float(value)

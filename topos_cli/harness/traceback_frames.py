"""A worker's standard error as a failure's detail: the exception, not a traceback's frames."""

from __future__ import annotations

#: The lines of a Python traceback that are not its exception: its header and the
#: sentences that chain one exception to another.
TRACEBACK_LINES = (
    "Traceback (most recent call last):",
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)


def without_traceback_frames(lines: list[str]) -> list[str]:
    """`lines` of a worker's stderr without a traceback's header and frames (indented
    `File ...` lines, their source and carets): a failure's detail shows the exception
    in one line, not raw frames (a shard's failure printed them into the verdict's
    notes). The whole tail is still kept in the run's facts (`stderr_tail`)."""
    return [
        line
        for line in lines
        if line.strip() not in TRACEBACK_LINES and not line.startswith((" ", "\t"))
    ]

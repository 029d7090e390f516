"""A worker's standard error: a failure's detail shows the exception, not a traceback's
frames; a warning the worker gives is passed on to the grade's own, once."""

from __future__ import annotations

import sys

#: A worker's stderr line that begins so is passed on to the grade's stderr (once).
WORKER_WARNING = "topos: warning: "
_WARNINGS_SHOWN: set[str] = set()

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


def pass_on_warning(line: str, longest: int) -> None:
    """Writes `line` (cut at `longest`) to this process's stderr if it is a worker's
    warning not yet shown: a warning a worker gives (a vocabulary that makes the model's
    memory explode) is the user's to see, once per grade however many workers give it."""
    if line.startswith(WORKER_WARNING) and line not in _WARNINGS_SHOWN:
        _WARNINGS_SHOWN.add(line)
        sys.stderr.write(line[:longest] + "\n")
        sys.stderr.flush()

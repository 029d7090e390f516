"""How a worker reports a failure: one `error` event naming its kind (bad data, a bad
workload, a crash) and the user's line where it is theirs, the traceback on stderr."""

from __future__ import annotations

import os
import traceback

from topos_cli.worker.event_stream import EventStream
from topos_cli.worker.protocol import (
    EXIT_ERROR,
    Error,
)


class WorkloadRouteError(ValueError):
    """A route the workload does not offer: a usage error, reported as kind `workload`."""


def error_kind(error: BaseException) -> str:
    """How the grader should classify a failure: bad data, a bad workload, or a crash."""
    from topos.datasets.errors import DataError
    from topos.errors import GraphError, ShapeError
    from topos.workloads import WorkloadNotFoundError

    if isinstance(error, DataError):
        return "data"
    if isinstance(error, (WorkloadNotFoundError, WorkloadRouteError, ShapeError, GraphError)):
        return "workload"
    return "crash"


def where_raised(error: BaseException) -> str:
    """The innermost frame outside topos itself: the user's offending expression."""
    frames = traceback.extract_tb(error.__traceback__)
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    library = (os.path.join(package, "topos") + os.sep, os.path.join(package, "topos_cli") + os.sep)
    for frame in reversed(frames):
        if not frame.filename.startswith(library):
            return f"{frame.filename}:{frame.lineno}: {(frame.line or '').strip()}"
    return ""


def report_failure(error: BaseException, events: EventStream) -> int:
    """Reports `error` as one `error` event (its kind, the user's line when it is theirs)
    and the traceback on stderr; the worker's exit status."""
    where = where_raised(error)
    if isinstance(error, MemoryError):
        # The frames still hold what filled memory; free it so the report can be sent.
        traceback.clear_frames(error.__traceback__)
    message = str(error).splitlines()[0] if str(error) else type(error).__name__
    kind = error_kind(error)
    if kind == "crash" and not events.ready:
        from topos.workloads.user_code_error import user_code_error

        # Raised in, or called from, the user's workload code as the route was made
        # ready: theirs, a usage error, not a crash (once training, a failed route).
        mistake = user_code_error(error)
        if mistake is not None:
            kind, message = "workload", mistake
    events.emit(Error(kind, type(error).__name__, message, where))
    traceback.print_exception(error)
    return EXIT_ERROR

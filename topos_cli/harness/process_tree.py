"""The processes a worker leaves behind, found and ended, even those that left its group.

A worker runs in a process group of its own, and killing the group ends the
worker and everything that stayed in it. A workload may still start a process
in a new session (`start_new_session=True`, a daemon's double fork): it is
out of the group, and when the worker dies it is re-parented away from it.
Such a process keeps the worker's pipes open and outlives the grade. So the
grader (on Linux) becomes a *child subreaper*: orphans of its workers are
re-parented to it rather than to init, and can be found among its own
children and ended; the monitor also remembers the worker's descendants while
it runs, which covers systems without subreapers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

import psutil

#: `prctl` option number of PR_SET_CHILD_SUBREAPER (linux/prctl.h).
_SET_CHILD_SUBREAPER = 36

#: How long ending the leftovers may take, at most.
LEFTOVER_WAIT_SECONDS = 1.0

ProcessKey = tuple[int, float]


def adopt_orphans() -> bool:
    """Makes this process the subreaper of its descendants (Linux); says whether it could."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def key_of(process: psutil.Process) -> ProcessKey | None:
    """A process's id and start time: a process id alone may be reused by the time it is used."""
    try:
        return process.pid, process.create_time()
    except psutil.Error:
        return None


def descendants(pid: int) -> set[ProcessKey]:
    """The keys of every living descendant of process `pid` (none if it is gone)."""
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return set()
    return {key for key in map(key_of, children) if key is not None}


def own_children() -> set[ProcessKey]:
    """The keys of this process's living descendants."""
    return descendants(os.getpid())


def end_processes(keys: set[ProcessKey], keep: set[ProcessKey] = frozenset()) -> int:
    """Kills every process of `keys` (not in `keep`) that is still the same process,
    and reaps those that are this process's children; returns how many were killed."""
    victims = []
    for pid, created in keys - set(keep):
        if pid == os.getpid():
            continue
        try:
            process = psutil.Process(pid)
            if process.create_time() != created:
                continue  # the id was reused: not ours
            process.send_signal(signal.SIGKILL)
        except psutil.Error:
            continue
        victims.append(process)
    with contextlib.suppress(psutil.Error):
        # Reaps our own children among them (an orphan adopted as subreaper is one).
        psutil.wait_procs(victims, timeout=LEFTOVER_WAIT_SECONDS)
    return len(victims)

"""The route's CPU clock: how much processor time a step of the route got, beside its wall
time, so the grader can tell a step that waited for a processor from one that worked.

The route is this process (`time.process_time`, every thread of it, BLAS's included)
and its shard processes. A shard process's CPU time is read from the kernel's
per-process CPU clock (`clock_gettime` on the clock id Linux derives from a pid:
about a microsecond, nanosecond resolution), else from `/proc/PID/stat` (utime +
stime, in clock ticks: coarse). Involuntary context switches (preemptions) come from
`getrusage` for this process; a shard process's from `/proc/PID/status`, which costs
a hundred microseconds or more to read, so only at the start and the end of the steps.

Everything is best effort: where a clock cannot be read the answer is `None`, never
an error, and the grader then says disturbance is unknown.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

try:
    import resource
except ImportError:  # pragma: no cover - not on Windows
    resource = None  # type: ignore[assignment]

#: Linux's CPU clock id of a whole process (CPUCLOCK_SCHED of the process, not a thread).
_PROCESS_CLOCK_SCHED = 2


def _process_clock_id(pid: int) -> int:
    """The clock id under which Linux answers `pid`'s process-wide CPU time."""
    return ((~pid) << 3) | _PROCESS_CLOCK_SCHED


def _stat_seconds(pid: int) -> float | None:
    """utime + stime of `pid` from `/proc/PID/stat`, in seconds, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
        # The command name may hold spaces and parentheses: fields count from the last ')'.
        fields = text[text.rindex(b")") + 2 :].split()
        ticks = int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def child_cpu_seconds(pid: int) -> float | None:
    """The CPU seconds process `pid` has used (all its threads), or None if unreadable."""
    try:
        return time.clock_gettime(_process_clock_id(pid))
    except (OSError, OverflowError, AttributeError, ValueError):
        return _stat_seconds(pid)


def involuntary_switches(pid: int) -> int | None:
    """The involuntary context switches of `pid`'s main thread from `/proc/PID/status`."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"nonvoluntary_ctxt_switches:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _own_switches() -> int | None:
    """This process's involuntary context switches (all its threads), or None."""
    if resource is None:
        return None
    try:
        return int(resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw)
    except (OSError, ValueError):
        return None


class RouteClock:
    """Reads the route's CPU seconds and preemptions; `step` gives one step's share.

    `children` answers the shard processes' ids now (they may be forked at the first
    step, and again after a close).
    """

    def __init__(self, children: Callable[[], Sequence[int]]) -> None:
        self._children = children
        self._cpu: dict[int, float | None] = {}
        self._switches: int | None = None

    def _read(self) -> dict[int, float | None]:
        """CPU seconds by process: this one (pid 0 here) and each shard process."""
        readings: dict[int, float | None] = {0: time.process_time()}
        for pid in self._children():
            readings[pid] = child_cpu_seconds(pid)
        return readings

    def start(self) -> None:
        """Marks the start of a step."""
        self._cpu, self._switches = self._read(), _own_switches()

    def step(self) -> tuple[float | None, int | None]:
        """The CPU seconds and involuntary switches since `start`, None where unknown. A
        shard process forked during the step counts from zero; one that ended is lost."""
        readings, switches = self._read(), _own_switches()
        spent: float | None = 0.0
        for pid, now in readings.items():
            before = self._cpu.get(pid, 0.0)
            if now is None or before is None or spent is None:
                spent = None
            else:
                spent += max(now - before, 0.0)
        preempted = None
        if switches is not None and self._switches is not None:
            preempted = max(switches - self._switches, 0)
        return spent, preempted

    def shard_switches(self) -> int | None:
        """The shard processes' involuntary switches so far, summed (None if unreadable)."""
        counts = [involuntary_switches(pid) for pid in self._children()]
        if not counts or any(count is None for count in counts):
            return None
        return sum(count for count in counts if count is not None)

"""What the whole machine did while a route ran: CPU time busy, idle and stolen (from
`/proc/stat`) and the load average (`/proc/loadavg`), read by the grader around a run's
measured steps. A reading is a few microseconds; without `/proc` it is `None`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from topos_cli.result.repeat import MachineFacts


@dataclass(frozen=True)
class MachineReading:
    """The machine's cumulative CPU seconds at one moment, and its load average."""

    moment: float
    busy_seconds: float
    idle_seconds: float
    steal_seconds: float
    load_average: float | None
    #: This (the grader's) process's own CPU seconds, so its share is not counted as others'.
    grader_cpu_seconds: float


def read_machine(
    stat_path: str = "/proc/stat", load_path: str = "/proc/loadavg"
) -> MachineReading | None:
    """The machine's CPU counters now, or None where they cannot be read."""
    try:
        with open(stat_path, "rb") as stat:
            first = stat.readline().split()
        if not first or first[0] != b"cpu":
            return None
        ticks = [int(value) for value in first[1:]]
        tick = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice, inside user]
    ticks += [0] * (8 - len(ticks))
    idle = ticks[3] + ticks[4]
    steal = ticks[7]
    busy = sum(ticks[:8]) - idle - steal
    load = None
    try:
        with open(load_path, "rb") as loadavg:
            load = float(loadavg.read().split()[0])
    except (OSError, ValueError, IndexError):
        load = None
    times = os.times()
    return MachineReading(
        moment=time.monotonic(),
        busy_seconds=busy / tick,
        idle_seconds=idle / tick,
        steal_seconds=steal / tick,
        load_average=load,
        grader_cpu_seconds=times.user + times.system,
    )


def machine_facts(
    start: MachineReading | None,
    end: MachineReading | None,
    route_cpu_seconds: float | None,
    cores: int | None = None,
) -> MachineFacts | None:
    """What the machine did between two readings, as a run's facts keep it: elapsed,
    capacity (elapsed times cores), busy, idle and steal seconds, the CPU seconds of
    others (busy less the route's and the grader's own), and the load averages."""
    if start is None or end is None:
        return None
    elapsed = end.moment - start.moment
    if elapsed <= 0:
        return None
    cores = cores or os.cpu_count() or 1
    busy = end.busy_seconds - start.busy_seconds
    grader = end.grader_cpu_seconds - start.grader_cpu_seconds
    others = None
    if route_cpu_seconds is not None:
        others = max(busy - route_cpu_seconds - grader, 0.0)
    return MachineFacts(
        elapsed_seconds=elapsed,
        cores=cores,
        capacity_seconds=elapsed * cores,
        busy_seconds=busy,
        idle_seconds=end.idle_seconds - start.idle_seconds,
        steal_seconds=end.steal_seconds - start.steal_seconds,
        route_cpu_seconds=route_cpu_seconds,
        grader_cpu_seconds=grader,
        others_cpu_seconds=others,
        load_average_start=start.load_average,
        load_average_end=end.load_average,
    )

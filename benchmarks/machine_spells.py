"""The machine's slow spells: a workload's steps beside a fixed probe, step by step.

    python -m benchmarks.machine_spells [--workload gpt] [--steps 600] [--out PATH]

The shared virtual machines here run a process about 1.5x slower for seconds at a time,
in CPU time as in wall time: nothing waits, so the grader's disturbance check (wall time
its own CPU time cannot explain) sees nothing. This trains one shard's rows of a
workload in this process on one BLAS thread and, before each step, times a fixed probe
(a short pure-Python loop and a few small NumPy products, about 0.3 ms), then reports:

- the steps: quartiles, and the *slow* ones (over 1.25x the lower quartile);
- the slow steps' utilisation (CPU time over wall time): near 1, which is why the
  disturbance check cannot see them;
- the probe: its correlation with the step time, its median before slow and before
  other steps, and how many of each it flags (over 1.25x its own lower quartile):
  whether a probe could tell a slowed step from a quiet one.

A measurement aid for the time verdict's next rule, not part of it. Load average before
and after is printed: run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from benchmarks.benchmark_report import now, write_report

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: A step slower than this times the lower quartile is slow; the same for the probe.
SLOW = 1.25


def probe(matrix) -> float:
    """Seconds a fixed piece of work takes: a pure-Python loop, then small products."""
    import numpy as np

    start = time.perf_counter()
    total = 0
    for value in range(3000):
        total += value * value
    for _ in range(20):
        np.dot(matrix, matrix)
    return time.perf_counter() - start


def measure(workload_name: str, steps: int) -> list[tuple[float, float, float]]:
    """(step seconds, step CPU seconds, probe seconds before it) for each step."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    from topos.training import Training
    from topos.workloads import resolve

    workload = resolve(workload_name)
    workload = replace(workload, batch_size=workload.batch_size // workload.shards, shards=1)
    training = Training(workload, "recorded", workload.dataset(None), steps + 5)
    matrix = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    readings = []
    with threadpool_limits(1):
        for step in range(5):
            training.step(step)
        for step in range(5, steps + 5):
            probed = probe(matrix)
            start, cpu = time.perf_counter(), time.process_time()
            training.step(step)
            readings.append((time.perf_counter() - start, time.process_time() - cpu, probed))
    return readings


def summarize(readings: list[tuple[float, float, float]]) -> dict:
    """The figures the module describes, from `measure`'s readings."""
    walls = [wall for wall, _, _ in readings]
    probes = [probed for _, _, probed in readings]
    wall_q1, wall_median, wall_q3 = statistics.quantiles(walls, n=4)
    probe_q1 = statistics.quantiles(probes, n=4)[0]
    slow = [reading for reading in readings if reading[0] > SLOW * wall_q1]
    other = [reading for reading in readings if reading[0] <= SLOW * wall_q1]

    def flagged(group) -> float | None:
        if not group:
            return None
        return sum(probed > SLOW * probe_q1 for _, _, probed in group) / len(group)

    def median_of(values) -> float | None:
        return statistics.median(values) if values else None

    return {
        "steps": len(readings),
        "step_ms": {"q1": wall_q1 * 1e3, "median": wall_median * 1e3, "q3": wall_q3 * 1e3},
        "slow_fraction": len(slow) / len(readings),
        "slow_step_utilisation": median_of([cpu / wall for wall, cpu, _ in slow]),
        "probe_correlation": statistics.correlation(walls, probes),
        "probe_ms_before_slow": median_of([probed * 1e3 for _, _, probed in slow]),
        "probe_ms_before_other": median_of([probed * 1e3 for _, _, probed in other]),
        "probe_flags_slow": flagged(slow),
        "probe_flags_other": flagged(other),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="gpt", help="a built-in workload (gpt, cifar10)")
    parser.add_argument("--steps", type=int, default=600, help="measured steps")
    parser.add_argument("--out", type=Path, help="where to write the JSON")
    arguments = parser.parse_args(argv)
    started = now()
    before = os.getloadavg()[0]
    figures = summarize(measure(arguments.workload, arguments.steps))
    figures["load_average"] = [before, os.getloadavg()[0]]
    figures["workload"] = arguments.workload
    step = figures["step_ms"]
    print(
        f"{arguments.workload}, one shard's rows, {figures['steps']} steps: "
        f"{step['median']:.2f} ms/step (q1 {step['q1']:.2f}, q3 {step['q3']:.2f}); "
        f"{figures['slow_fraction']:.0%} slow (over {SLOW}x q1) at utilisation "
        f"{figures['slow_step_utilisation'] or float('nan'):.2f}"
    )
    print(
        f"probe: correlation {figures['probe_correlation']:.2f} with the step; "
        f"{figures['probe_ms_before_slow'] or float('nan'):.3f} ms before slow steps, "
        f"{figures['probe_ms_before_other'] or float('nan'):.3f} before the others; flags "
        f"{figures['probe_flags_slow'] or 0:.0%} of slow steps and "
        f"{figures['probe_flags_other'] or 0:.0%} of the others"
    )
    print(f"load average {before:.2f} -> {figures['load_average'][1]:.2f}")
    write_report(
        "machine_spells",
        figures,
        arguments.out or ROOT / "results" / "machine_spells.json",
        started,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

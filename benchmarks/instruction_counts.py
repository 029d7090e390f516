"""What counting a route's steps costs, and how steady the counts are: quiet and beside
a CPU hog (`grade --measure instructions`).

For each workload and route: the seconds its counting worker took (as the grade's result
says) and what a grade of the same steps costs with counting and without, and the
per-step instructions of two counted grades, one on a quiet machine and one beside a
busy loop on every core. Counts are a property of the code: the two should agree to well
within 0.1%. It runs `topos grade` as a user does and reads its result JSON: nothing here
imports the command.

    python -m benchmarks.instruction_counts --workload mnist --route engine
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.grade_command import run_grade

#: The training steps of each grade; its counting worker counts the grade's own few
#: steps of them (`grade --measure instructions`), its timed worker times them all.
STEPS = 5


def _busy(stop) -> None:
    while not stop.is_set():
        sum(range(10_000))


def _grade(
    workload: str, route: str, steps: int, folder: Path, *measure: str
) -> tuple[float, dict[str, Any]]:
    """Seconds a `topos grade` of one route took, and its result JSON."""
    result = folder / f"grade-{len(list(folder.iterdir()))}.json"
    arguments = ["--workload", workload, "--routes", route, "--steps", str(steps), *measure]
    environment = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    return run_grade(arguments, result, environment=environment)


def _counts(result: dict[str, Any], route: str) -> dict[str, Any]:
    """The route's counts in a result (`RouteCounts` as JSON), or a failure saying why."""
    for counts in result.get("counts") or ():
        if counts.get("route") == route:
            return counts
    return {"status": "failed", "detail": result.get("error") or "the grade wrote no counts"}


def _median(per_step: list[int]) -> float:
    """The median of the judged steps (all but the first), as the grade judges them."""
    judged = sorted(per_step[1:] if len(per_step) > 1 else per_step)
    middle = len(judged) // 2
    return float(judged[middle]) if len(judged) % 2 else (judged[middle - 1] + judged[middle]) / 2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", action="append", help="repeatable; default mnist")
    parser.add_argument("--route", action="append", help="repeatable; default engine")
    parser.add_argument(
        "--steps", type=int, default=STEPS, help="training steps of each grade (default 5)"
    )
    arguments = parser.parse_args()
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if "model name" in line)
    except (OSError, StopIteration):
        pass
    print(f"CPU: {cpu}; load {os.getloadavg()[0]:.2f} at start")
    counting = ("--measure", "instructions")
    with tempfile.TemporaryDirectory(prefix="instruction-counts-") as scratch:
        folder = Path(scratch)
        for workload in arguments.workload or ["mnist"]:
            for route in arguments.route or ["engine"]:
                plain, _ = _grade(workload, route, arguments.steps, folder)
                counted, result = _grade(workload, route, arguments.steps, folder, *counting)
                quiet = _counts(result, route)
                if quiet.get("status") == "not counted":
                    print(quiet.get("detail"))
                    return 1
                stop = multiprocessing.Event()
                hogs = [
                    multiprocessing.Process(target=_busy, args=(stop,))
                    for _ in range(os.cpu_count() or 1)
                ]
                for hog in hogs:
                    hog.start()
                try:
                    _, busy_result = _grade(workload, route, arguments.steps, folder, *counting)
                finally:
                    stop.set()
                    for hog in hogs:
                        hog.join()
                busy = _counts(busy_result, route)
                if quiet.get("status") != "counted" or busy.get("status") != "counted":
                    print(f"{workload} {route}: {quiet.get('detail') or busy.get('detail')}")
                    continue
                quiet_median, busy_median = _median(quiet["per_step"]), _median(busy["per_step"])
                judged = quiet["per_step"][1:] or quiet["per_step"]
                spread = (max(judged) - min(judged)) / quiet_median
                apart = abs(busy_median / quiet_median - 1.0)
                alike = quiet["per_step"] == busy["per_step"]
                print(
                    f"{workload} {route}: {quiet_median / 1e6:.3f} M instructions/step quiet, "
                    f"{busy_median / 1e6:.3f} M beside {len(hogs)} hogs ({apart:.4%} apart, "
                    f"{'every step alike' if alike else 'steps differ'}); steps' spread "
                    f"{spread:.4%}; {quiet.get('tool')}; "
                    f"the counting worker {quiet['seconds']:.1f} s; "
                    f"the grade {counted:.1f} s counted against {plain:.1f} s without "
                    f"({counted / plain:.1f}x)"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

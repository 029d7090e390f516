"""What counting a route's steps costs, and how steady the counts are: quiet and beside
a CPU hog (`grade --measure instructions`).

For each workload and route: the seconds a counting worker takes (against a plain
worker of the same steps, in the same run), and the per-step instructions of two
counting workers, one on a quiet machine and one beside a busy loop on every core.
Counts are a property of the code: the two should agree to well within 0.1%.

    python -m benchmarks.instruction_counts --workload mnist --route engine
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import subprocess
import sys
import time

from topos_cli.harness.client_requests import client_requests_library
from topos_cli.harness.instruction_counting import COUNTED_STEPS, CountingRun, valgrind_tool
from topos_cli.harness.worker_request import WorkerRequest


def _busy(stop) -> None:
    while not stop.is_set():
        sum(range(10_000))


def _plain_seconds(request: WorkerRequest, environment: dict[str, str]) -> float:
    began = time.monotonic()
    subprocess.run(request.command(), env=environment, capture_output=True, check=True)
    return time.monotonic() - began


def _count(request, environment, tool, library, steps):
    run = CountingRun(request, environment, tool, library, steps)
    run.start()
    run.wait(3600)
    return run.counts()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", action="append", help="repeatable; default mnist")
    parser.add_argument("--route", action="append", help="repeatable; default engine")
    parser.add_argument("--steps", type=int, default=COUNTED_STEPS)
    arguments = parser.parse_args()
    tool = valgrind_tool()
    if isinstance(tool, str):
        print(tool)
        return 1
    library = client_requests_library()
    environment = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if "model name" in line)
    except (OSError, StopIteration):
        pass
    print(f"CPU: {cpu}; load {os.getloadavg()[0]:.2f} at start; {tool[1]}")
    for workload in arguments.workload or ["mnist"]:
        for route in arguments.route or ["engine"]:
            request = WorkerRequest(workload=workload, route=route, steps=arguments.steps)
            plain = _plain_seconds(request, environment)
            quiet = _count(request, environment, tool, library, arguments.steps)
            stop = multiprocessing.Event()
            hogs = [
                multiprocessing.Process(target=_busy, args=(stop,))
                for _ in range(os.cpu_count() or 1)
            ]
            for hog in hogs:
                hog.start()
            try:
                busy = _count(request, environment, tool, library, arguments.steps)
            finally:
                stop.set()
                for hog in hogs:
                    hog.join()
            if quiet.median is None or busy.median is None:
                print(f"{workload} {route}: {quiet.detail or busy.detail}")
                continue
            apart = abs(busy.median / quiet.median - 1.0)
            print(
                f"{workload} {route}: {quiet.median / 1e6:.3f} M instructions/step quiet, "
                f"{busy.median / 1e6:.3f} M beside {len(hogs)} hogs ({apart:.4%} apart, "
                f"{'every step alike' if quiet.per_step == busy.per_step else 'steps differ'}); "
                f"steps' spread {quiet.spread:.4%}; counting {quiet.seconds:.1f} s against "
                f"{plain:.1f} s for the plain worker ({quiet.seconds / plain:.1f}x), "
                f"{busy.seconds:.1f} s beside the hogs"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

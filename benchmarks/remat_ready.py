"""How soon the remat route is ready, beside the recorded route: per workload, the
seconds from a worker's start to a trained-ready program (recording, lowering, and
for remat what a grade reports of its plan at ready: its floor only if the lowering
sought it) and the resident set after `gc.collect()` then.

    python benchmarks/remat_ready.py [--rounds 3] [--budget 100%|default|50%|floor...]
        [--workloads gpt,llama,cifar10,mnist,tests.support.user_models:gru_workload]

Each measurement runs in a process of its own (this file with `--worker`), routes
alternating round by round; prints the medians and remat's ratio to recorded. Run with
the repository's root on PYTHONPATH (the GRU is the tests' user model).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = "gpt,llama,cifar10,mnist,tests.support.user_models:gru_workload"


def resident_bytes() -> int:
    """This process's resident set (Linux)."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    import os

    return pages * os.sysconf("SC_PAGE_SIZE")


def worker(workload_name: str, route: str, budget: str) -> dict:
    """Makes one route ready as a grade's worker does, timing it from this call."""
    started = time.perf_counter()
    import gc

    from topos.training.training import Training
    from topos.workloads import resolve

    workload = resolve(workload_name)
    # "default": the remat route's default budget, as a grade gives it.
    chosen = None if route != "remat" or budget == "default" else budget
    training = Training(workload, route, workload.dataset(None), 1, chosen)
    plan = training.program.plan
    facts = {}
    if route == "remat":
        # What the worker's ready facts read of a remat plan (the floor only if the
        # lowering sought it).
        facts = {
            "floor_bytes": plan.sought_floor_bytes,
            "recomputations": plan.recomputations,
            "planned_bytes": plan.planned_bytes,
        }
    # What the worker reads of its plan as it marks ready, seeking no floor.
    training.summary(seek_floor=False)
    training.hold_batches()
    gc.collect()
    return {
        "seconds": time.perf_counter() - started,
        "lower_seconds": training.program.lower_seconds,
        "rss": resident_bytes(),
        **facts,
    }


def run_worker(workload: str, route: str, budget: str) -> dict | str:
    """One measurement in a process of its own; the error's last line if it failed."""
    command = [sys.executable, "-m", "benchmarks.remat_ready", "--worker", workload, route, budget]
    finished = subprocess.run(command, capture_output=True, cwd=ROOT, timeout=900, text=True)
    if finished.returncode:
        return (finished.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(finished.stdout.splitlines()[-1])


def main() -> None:
    """Measures every workload's two routes, alternating, and prints the medians."""
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(worker(*sys.argv[2:5])))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", default="100%")
    parser.add_argument("--workloads", default=WORKLOADS)
    arguments = parser.parse_args()
    print(f"budget {arguments.budget}; medians of {arguments.rounds} rounds")
    print(
        f"{'workload':<40} {'recorded s':>10} {'remat s':>8} {'ratio':>6} "
        f"{'lowering s':>10} {'RSS +MiB':>8}"
    )
    for workload in arguments.workloads.split(","):
        measured: dict[str, list[dict]] = {"recorded": [], "remat": []}
        for round_ in range(arguments.rounds):
            routes = ("recorded", "remat") if round_ % 2 == 0 else ("remat", "recorded")
            for route in routes:
                measured[route].append(run_worker(workload, route, arguments.budget))
        failed = [m for route in measured.values() for m in route if isinstance(m, str)]
        if failed:
            print(f"{workload:<40} {failed[0][:90]}", flush=True)
            continue

        def median(route: str, key: str, measured=measured) -> float:
            return statistics.median(m[key] for m in measured[route])

        recorded, remat = median("recorded", "seconds"), median("remat", "seconds")
        extra = (median("remat", "rss") - median("recorded", "rss")) / 2**20
        print(
            f"{workload:<40} {recorded:>10.2f} {remat:>8.2f} {remat / recorded:>6.2f} "
            f"{median('remat', 'lower_seconds'):>10.2f} {extra:>+8.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()

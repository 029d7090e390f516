"""How soon the remat route is ready, beside the recorded route: per workload, the
seconds from a worker's start to a trained-ready program (recording, lowering, and
for remat what a grade reports of its plan at ready: its floor only if the lowering
sought it) and the resident set after `gc.collect()` then.

    python -m benchmarks.remat_ready [--rounds 3] [--budget 100%|default|50%|floor...]
        [--workloads gpt,llama,cifar10,mnist,tests.support.user_models:gru_workload]
        [--search-in-worker]

Each measurement runs in a process of its own (this file with `--worker`), routes
alternating round by round; prints the medians and remat's ratio to recorded. As a
grade does, remat is first lowered once in a planning child (`remat_plans --write`),
each remat worker rebuilding the plan it chose ('planning s' is the child's search);
`--search-in-worker` has each remat worker search itself, as grades did before. Also
prints each route's CPU seconds to ready (the machine may be shared: wall seconds
stretch with its load, CPU seconds much less). Run with the repository's root on
PYTHONPATH (the GRU is the tests' user model; `sequence_model:workload` needs
`examples/` too).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = "gpt,llama,cifar10,mnist,tests.support.user_models:gru_workload,sequence_model:workload"


def resident_bytes() -> int:
    """This process's resident set (Linux)."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    import os

    return pages * os.sysconf("SC_PAGE_SIZE")


def worker(workload_name: str, route: str, budget: str, schedule: str = "-") -> dict:
    """Makes one route ready as a grade's worker does, timing it from this call (remat
    rebuilt from the file `schedule` unless it is `-`)."""
    started = time.perf_counter()
    cpu_started = time.process_time()
    import gc

    from topos.training.training import Training
    from topos.workloads import resolve

    workload = resolve(workload_name)
    # "default": the remat route's default budget, as a grade gives it.
    chosen = None if route != "remat" or budget == "default" else budget
    lowered = None if schedule == "-" else Path(schedule).read_text(encoding="utf-8")
    dataset = workload.dataset(None)
    training = Training(workload, route, dataset, 1, chosen, lowered_schedule=lowered)
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
        "cpu_seconds": time.process_time() - cpu_started,
        "lower_seconds": training.program.lower_seconds,
        "rss": resident_bytes(),
        **facts,
    }


def run_worker(workload: str, route: str, budget: str, schedule: str = "-") -> dict | str:
    """One measurement in a process of its own; the error's last line if it failed."""
    command = [
        sys.executable,
        "-m",
        "benchmarks.remat_ready",
        "--worker",
        workload,
        route,
        budget,
        schedule,
    ]
    finished = subprocess.run(command, capture_output=True, cwd=ROOT, timeout=900, text=True)
    if finished.returncode:
        return (finished.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(finished.stdout.splitlines()[-1])


def main() -> None:
    """Measures every workload's two routes, alternating, and prints the medians."""
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(worker(*sys.argv[2:6])))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", default="100%")
    parser.add_argument("--workloads", default=WORKLOADS)
    parser.add_argument("--search-in-worker", action="store_true")
    arguments = parser.parse_args()
    where = "in each worker" if arguments.search_in_worker else "in a planning child"
    print(f"budget {arguments.budget}; medians of {arguments.rounds} rounds; search {where}")
    print(
        f"{'workload':<40} {'recorded s':>10} {'remat s':>8} {'ratio':>6} "
        f"{'cpu ratio':>9} {'lowering s':>10} {'planning s':>10} {'RSS +MiB':>8}"
    )
    for workload in arguments.workloads.split(","):
        with tempfile.TemporaryDirectory() as directory:
            schedule, planning = "-", float("nan")
            if not arguments.search_in_worker:
                schedule, planning = plan_in_child(workload, arguments.budget, directory)
            measured: dict[str, list[dict]] = {"recorded": [], "remat": []}
            for round_ in range(arguments.rounds):
                routes = ("recorded", "remat") if round_ % 2 == 0 else ("remat", "recorded")
                for route in routes:
                    chosen = schedule if route == "remat" else "-"
                    measured[route].append(run_worker(workload, route, arguments.budget, chosen))
        failed = [m for route in measured.values() for m in route if isinstance(m, str)]
        if failed:
            print(f"{workload:<40} {failed[0][:90]}", flush=True)
            continue

        def median(route: str, key: str, measured=measured) -> float:
            return statistics.median(m[key] for m in measured[route])

        recorded, remat = median("recorded", "seconds"), median("remat", "seconds")
        cpu = median("remat", "cpu_seconds") / median("recorded", "cpu_seconds")
        extra = (median("remat", "rss") - median("recorded", "rss")) / 2**20
        print(
            f"{workload:<40} {recorded:>10.2f} {remat:>8.2f} {remat / recorded:>6.2f} "
            f"{cpu:>9.2f} {median('remat', 'lower_seconds'):>10.2f} {planning:>10.2f} "
            f"{extra:>+8.1f}",
            flush=True,
        )


def plan_in_child(workload: str, budget: str, directory: str) -> tuple[str, float]:
    """Lowers remat under `budget` once, as a grade's planning child does, writing the
    chosen schedule into `directory`: its file ('-' if refused) and the search's seconds."""
    command = [sys.executable, "-m", "topos_cli.worker.remat_plans", workload, "-"]
    command += ["--write", directory, budget]
    finished = subprocess.run(command, capture_output=True, cwd=ROOT, timeout=900, text=True)
    told = json.loads(finished.stdout.splitlines()[-1]) if finished.returncode == 0 else {}
    path = (told.get("schedules") or {}).get(budget)
    if path is None:
        return "-", float("nan")
    seconds = json.loads(Path(path).read_text(encoding="utf-8"))["seconds"]
    return path, seconds


if __name__ == "__main__":
    main()

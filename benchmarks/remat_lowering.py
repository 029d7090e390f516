"""How long lowering the remat route takes, workload by workload; with `--against`, beside
another checkout, its plans checked equal to this one's.

    python -m benchmarks.remat_lowering [--rounds 3] [--workloads gpt,cifar10,mnist]
        [--against PATH] [--budgets default,70%,50%,35%,floor]

Each lowering runs in a worker process of its own (`python -m benchmarks.remat_lowering
--worker ROOT` run from ROOT, ROOT alone on the path: its `topos`, and its copy of this
module): it records the workload's recorded route as a grade does
(its synthetic dataset, one shard's rows), then times `RematPlan` at the remat route's
default budget. With `--against PATH` (the root of another checkout, such as a
`git worktree` of main), every round runs both checkouts' workers, the first of them
alternating, and the plans each gives at every budget of `--budgets` are compared: the
schedule (its evaluations, simulated peak and fit), the memory plan (every slot's
offset), the planned, floor and budget bytes, the recomputations, the FLOPs and
`describe()`. Prints the median seconds of each and their ratio.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pickle
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def worker(root: str, workload_name: str, budgets: list[str]) -> dict:
    """Times one lowering in `root`'s topos, and describes its plans at `budgets`."""
    import topos

    # A worker started from another folder would time another checkout's lowering.
    if Path(topos.__file__).resolve().parents[1] != Path(root).resolve():
        raise SystemExit(f"remat_lowering: the worker imported {topos.__file__}, not {root}'s")
    from topos.engine.budget import Budget
    from topos.engine.remat_plan import RematPlan
    from topos.errors import BudgetError
    from topos.training.route_program import DEFAULT_BUDGET, RouteProgram
    from topos.workloads import resolve

    workload = resolve(workload_name)
    workload = workload.fitted(workload.dataset(None))
    program = RouteProgram(workload, "recorded")
    network = program.network
    roots = network.entry(program.adjoints.roots()).roots
    started = time.perf_counter()
    RematPlan(network, roots, DEFAULT_BUDGET)
    seconds = time.perf_counter() - started
    plans = {}
    for text in budgets:
        budget = DEFAULT_BUDGET if text == "default" else Budget.of(text)
        try:
            plan = RematPlan(network, roots, budget)
        except BudgetError as error:
            plans[text] = ("BudgetError", str(error))
            continue
        schedule = plan.schedule
        plans[text] = {
            "evaluations": tuple(
                (evaluation.node, evaluation.inputs, evaluation.recomputation)
                for evaluation in schedule.evaluations
            ),
            "simulated_peak": schedule.simulated_peak,
            "fits": schedule.fits,
            "memory": dataclasses.asdict(plan.memory),
            "planned_bytes": plan.planned_bytes,
            "floor_bytes": plan.floor_bytes,
            "budget_bytes": plan.budget_bytes,
            "recomputations": plan.recomputations,
            "flops": (plan.flops, plan.extra_flops),
            "describe": plan.describe(),
        }
    return {"seconds": seconds, "plans": plans}


def run_worker(root: Path, workload: str, budgets: list[str]) -> dict:
    command = [sys.executable, "-m", "benchmarks.remat_lowering", "--worker", str(root)]
    command += [workload, ",".join(budgets)]
    # The checkout's root alone on the path (`-m` puts the working directory first).
    environment = {**os.environ, "PYTHONPATH": str(root)}
    finished = subprocess.run(
        command, capture_output=True, check=True, cwd=root, env=environment, timeout=900
    )
    return pickle.loads(finished.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workloads", default="gpt,cifar10,mnist")
    parser.add_argument("--against", type=Path, help="the root of another checkout")
    parser.add_argument("--budgets", default="default,70%,50%,35%,floor")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.worker:
        root, workload, budgets = arguments.worker
        budgets = budgets.split(",") if budgets else []
        sys.stdout.buffer.write(pickle.dumps(worker(root, workload, budgets)))
        return
    trees = {"this": ROOT}
    if arguments.against is not None:
        trees["against"] = arguments.against.resolve()
    # Plans are described in the first round only (they are the same every round).
    budgets = arguments.budgets.split(",")
    seconds: dict[tuple[str, str], list[float]] = {}
    differences = 0
    for round_number in range(arguments.rounds):
        for workload in arguments.workloads.split(","):
            order = list(trees.items())
            if round_number % 2:
                order.reverse()
            results = {
                label: run_worker(root, workload, budgets if round_number == 0 else [])
                for label, root in order
            }
            for label, result in results.items():
                seconds.setdefault((workload, label), []).append(result["seconds"])
            if round_number == 0 and len(results) == 2:
                for budget in budgets:
                    if results["this"]["plans"][budget] != results["against"]["plans"][budget]:
                        differences += 1
                        print(f"{workload} at {budget}: the plans differ")
    for workload in arguments.workloads.split(","):
        line = f"{workload:8}"
        medians = {label: statistics.median(seconds[(workload, label)]) for label in trees}
        for label, median in medians.items():
            each = ", ".join(f"{value:.3f}" for value in seconds[(workload, label)])
            line += f"  {label} {median:.3f} s ({each})"
        if len(medians) == 2:
            line += f"  against/this {medians['against'] / medians['this']:.1f}x"
        print(line)
    if len(trees) == 2:
        print(
            f"plans at {', '.join(budgets)}: "
            + ("identical" if not differences else f"{differences} differ")
        )
        sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()

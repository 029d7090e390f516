"""The remat frontier against the papers: per built-in, each default frontier budget's
activation reduction and recomputed FLOPs, beside what MONeT, Rockmate and HiRemate
report.

    python -m benchmarks.remat_against_papers [--workloads gpt,llama,cifar10,mnist]

From lowering alone, no training: a point's activation reduction is the recorded
route's planned bytes (its arena and roots) over the
remat plan's at that budget (its `remat_plan`), and its cost the plan's
recomputed FLOPs as a share of the unconstrained plan's (`extra_flops_fraction`), the
figures `topos describe --route remat --summary` prints. Planned bytes count the roots
(gradients, loss) every plan holds, under 5% of them on the built-ins. The papers measure time, not
FLOPs: MONeT (Shah et al., 2021), Rockmate (Zhao et al., ICML 2023) and HiRemate
(Zhao et al., 2024) report activation memory divided by 2 to 5 for 10-20% more
iteration time on large networks. FLOPs are what this planner trades; on these small
models a step's time is not all FLOPs, so the comparison is of the trade, not a race.
"""

from __future__ import annotations

import argparse
import time

from topos.training.route_program import RouteProgram
from topos.workloads.registry import resolve

#: The budgets `topos frontier` grades when none are given (its DEFAULT_FRONTIER_BUDGETS).
FRONTIER_BUDGETS = ("100%", "floor+75%", "floor+50%", "floor+25%", "floor")

#: What the papers report: activation memory divided by this range ...
PAPERS_REDUCTION = (2.0, 5.0)
#: ... for this range of extra iteration time.
PAPERS_EXTRA_TIME = (0.10, 0.20)
PAPERS = "MONeT, Rockmate, HiRemate"


def rows(name: str):
    """Per default budget of workload `name`: the budget, recorded's planned bytes, the
    plan's, the reduction, the plan's recomputations and extra FLOPs (a fraction)."""
    workload = resolve(name)
    # Recorded's program lowers remat's plans too (`remat_plan`): one recording for all.
    program = RouteProgram(workload, "recorded")
    memory = program.plan.memory
    recorded = memory.arena_bytes + memory.root_bytes  # what `RematPlan` calls planned
    for budget in FRONTIER_BUDGETS:
        plan = program.remat_plan(budget)
        yield (
            budget,
            recorded,
            plan.planned_bytes,
            recorded / plan.planned_bytes,
            plan.recomputations,
            plan.extra_flops_fraction,
        )


def within_papers(reduction: float, extra: float) -> str:
    """Where a point sits against the papers' trade: at least ÷2 for at most +20%."""
    low, _ = PAPERS_REDUCTION
    _, most = PAPERS_EXTRA_TIME
    if reduction >= low and extra <= most:
        return "within their trade"
    if reduction >= low:
        return "÷2 or more, dearer"
    return "short of ÷2"


def main() -> None:
    """Prints a table per workload, then the papers' figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workloads", default="gpt,llama,cifar10,mnist", help="comma-separated built-ins"
    )
    arguments = parser.parse_args()
    low, high = PAPERS_REDUCTION
    fewest, most = PAPERS_EXTRA_TIME
    papers = f"÷{low:g}-{high:g} for +{fewest:.0%}-{most:.0%} time"
    for name in arguments.workloads.split(","):
        started = time.perf_counter()
        measured = list(rows(name))
        seconds = time.perf_counter() - started
        recorded = measured[0][1]
        print(f"{name}: recorded plans {recorded / 2**20:.2f} MiB ({seconds:.0f} s to lower)")
        print(
            f"  {'budget':<10} {'planned MiB':>11} {'reduction':>9} {'recomputed':>10} "
            f"{'extra FLOPs':>11}  against the papers ({papers})"
        )
        for budget, _, planned, reduction, recomputations, extra in measured:
            print(
                f"  {budget:<10} {planned / 2**20:>11.2f} {'÷' + format(reduction, '.2f'):>9} "
                f"{recomputations:>10} {'+' + format(extra, '.1%'):>11}  "
                f"{within_papers(reduction, extra)}",
                flush=True,
            )
    print(f"papers ({PAPERS}): activations {papers}, on large networks")


if __name__ == "__main__":
    main()

"""The remat greedy against the optimum: per graph and budget, the greedy's recomputed
FLOPs beside the best schedule HiGHS finds for Checkmate's mixed-integer program
(tests/support/remat_optimum.py) and its proven lower bound.

    python -m benchmarks.remat_optimum [--seconds 60] [--graphs small,blocks]

Both in the greedy's simulated memory model, at budgets given as shares of the
recorded plan's planned bytes, and at the floor (the least budget the greedy meets,
bisected). `greedy` is the walk under the budget; `planner` the cheapest of the walks a
lowering tries (the budget's and the ladder's rungs above it, `remat_search`) whose
simulated peak is within the budget. The small graphs: a residual pair of tanh layers,
tanh MLPs of 1 to 4 layers, a small convnet. The blocks: one block of `gpt` and of
`llama` (topos.models) at tiny sizes (context 16, 8 features, 2 heads, 2 rows;
`one_block_transformer`), 148 and 104 computed nodes: the program has O(n^2) binaries,
and HiGHS proves nothing within minutes on a built-in's 200-300 nodes. A row whose
solve found no schedule in time says `-` under best; where it also proved no bound
above zero, the program's linear relaxation is solved (`relaxed_extra_flops`, as long
a time limit) and its optimum, a lower bound on any schedule's, is printed under `lp`
with the planner's ratio to it (`p/lp`: the planner is within that factor of the
optimum, at most; `inf` where the bound is 0, which bounds nothing). Run from the
repository's root (it borrows the tests' model builders and the reference).
"""

from __future__ import annotations

import argparse
import time

from tests.engine.test_remat_near_the_optimum import greedy_extra_flops, residual_pair
from tests.engine.test_remat_on_a_deep_mlp import deep_mlp
from tests.engine.test_remat_plan import convnet
from tests.engine.test_remat_schedule import simulation_inputs
from tests.support.remat_optimum import (
    one_block_transformer,
    optimal_extra_flops,
    relaxed_extra_flops,
)
from topos.engine.remat_schedule import RematScheduler
from topos.engine.remat_search import LADDER_STEPS


def small_graphs():
    """The small graphs measured, by name."""
    yield "residual pair", residual_pair()
    for layers in (1, 2, 3, 4):
        yield f"tanh MLP, {layers} layers", deep_mlp(layers)
    network, adjoints, _ = convnet()
    yield "convnet", (network, network.entry(adjoints.roots()).roots)


def blocks():
    """One block of gpt and of llama at tiny sizes, by name."""
    for kind in ("gpt", "llama"):
        yield f"{kind} block", one_block_transformer(kind)


def greedy_floor(scheduler: RematScheduler, whole: int) -> int:
    """The least budget (to 64 bytes) under which the greedy's walk fits, bisected."""
    low, high = 0, whole
    while high - low > 64:
        middle = (low + high) // 2
        schedule = scheduler.schedule(middle)
        if schedule is not None and schedule.fits:
            high = middle
        else:
            low = middle
    return high


def planner_extra_flops(scheduler, nodes, views, whole: int, budget: int) -> int | None:
    """The fewest recomputed FLOPs among the walks a lowering tries for `budget` (its own
    and the ladder's rungs above it) whose simulated peak keeps within it."""
    budgets = [budget, *(whole * k // LADDER_STEPS for k in range(1, LADDER_STEPS + 1))]
    found = []
    for tried in budgets:
        if tried < budget:
            continue
        schedule = scheduler.schedule(tried)
        if schedule is not None and schedule.fits and schedule.simulated_peak <= budget:
            found.append(greedy_extra_flops(schedule, nodes, views))
    return min(found, default=None)


def ratio(numerator: int | None, denominator: float | None) -> str:
    """numerator / denominator, or `-` where either is missing, `inf` over nothing."""
    if numerator is None or denominator is None or denominator == float("inf"):
        return "-"
    if denominator <= 0:
        return "1.00" if numerator == 0 else "inf"
    return f"{numerator / denominator:.2f}"


def shown(value) -> str:
    """A figure, or `-` for none."""
    return "-" if value is None else str(round(value))


def shown_bound(value: float | None) -> str:
    """A relaxation's bound: `-` for none solved, `inf` where it is infeasible."""
    if value is None:
        return "-"
    return "inf" if value == float("inf") else str(round(value))


def main() -> None:
    """Prints one line per graph and budget."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="HiGHS's time per solve")
    parser.add_argument(
        "--graphs", default="small,blocks", help="small, blocks, or both (comma-separated)"
    )
    arguments = parser.parse_args()
    chosen = arguments.graphs.split(",")
    graphs = [
        *(small_graphs() if "small" in chosen else ()),
        *(blocks() if "blocks" in chosen else ()),
    ]
    print(f"HiGHS {arguments.seconds:g} s a solve; FLOPs recomputed; g = greedy, p = planner")
    print(
        f"{'graph':<22} {'nodes':>5} {'budget':>7} {'greedy':>8} {'planner':>8} {'best':>8} "
        f"{'bound':>8} {'g/best':>6} {'p/best':>6} {'g/bound':>7} {'lp':>8} {'p/lp':>6}  s"
    )
    for name, (network, roots) in graphs:
        inputs, whole = simulation_inputs(network, roots)
        scheduler = RematScheduler(*inputs)
        nodes, views = inputs[0], inputs[4]
        computed = sum(not scheduler.is_source[i] for i in scheduler.evaluated)
        floor = greedy_floor(scheduler, whole)
        budgets = [(f"{p}%", whole * p // 100) for p in (100, 90, 75, 60)]
        budgets.append(("floor", floor))
        for label, budget in budgets:
            schedule = scheduler.schedule(budget)
            fits = schedule is not None and schedule.fits
            greedy = greedy_extra_flops(schedule, nodes, views) if fits else None
            planner = planner_extra_flops(scheduler, nodes, views, whole, budget)
            started = time.perf_counter()
            best, bound = optimal_extra_flops(scheduler, nodes, views, budget, arguments.seconds)
            relaxed = None
            if bound is not None and best is None and bound <= 0:
                relaxed = relaxed_extra_flops(scheduler, nodes, views, budget, arguments.seconds)
            seconds = time.perf_counter() - started
            if relaxed is not None and relaxed == float("inf"):
                note = "infeasible (its relaxation)"
            elif bound is None:
                note = "infeasible (proven)"
            elif best is None:
                note = "no schedule found in time"
            elif best == bound:
                note = "proven"
            else:
                note = ""
            print(
                f"{name:<22} {computed:>5} {label:>7} {shown(greedy):>8} {shown(planner):>8} "
                f"{shown(best):>8} {shown(bound):>8} {ratio(greedy, best):>6} "
                f"{ratio(planner, best):>6} {ratio(greedy, bound):>7} "
                f"{shown_bound(relaxed):>8} {ratio(planner, relaxed):>6}  {seconds:.1f} {note}",
                flush=True,
            )


if __name__ == "__main__":
    main()

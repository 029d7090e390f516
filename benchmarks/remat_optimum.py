"""The remat greedy against the optimum: per graph and budget, the greedy's recomputed
FLOPs beside the best schedule HiGHS finds for Checkmate's mixed-integer program
(tests/support/remat_optimum.py) and its proven lower bound.

    python -m benchmarks.remat_optimum [--seconds 15]

Both in the greedy's simulated memory model, at budgets given as shares of the
recorded plan's planned bytes. The graphs are small (a residual pair of tanh layers,
tanh MLPs of 1 to 4 layers, a small convnet): the program has O(n^2) binaries, and
HiGHS proves nothing within minutes on a built-in's 200-300 nodes (gpt, llama), whose
blocks are not separable graphs of their own here. Run from the repository's root (it
borrows the tests' model builders and the reference).
"""

from __future__ import annotations

import argparse
import time

from tests.engine.test_remat_near_the_optimum import greedy_extra_flops, residual_pair
from tests.engine.test_remat_on_a_deep_mlp import deep_mlp
from tests.engine.test_remat_plan import convnet
from tests.engine.test_remat_schedule import simulation_inputs
from tests.support.remat_optimum import optimal_extra_flops
from topos.engine.remat_schedule import RematScheduler


def graphs():
    """The graphs measured, by name."""
    yield "residual pair", residual_pair()
    for layers in (1, 2, 3, 4):
        yield f"tanh MLP, {layers} layers", deep_mlp(layers)
    network, adjoints, _ = convnet()
    yield "convnet", (network, network.entry(adjoints.roots()).roots)


def main() -> None:
    """Prints one line per graph and budget."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="HiGHS's time per solve")
    arguments = parser.parse_args()
    print(f"{'graph':<22} {'budget':>6} {'greedy':>8} {'best':>8} {'bound':>8} {'ratio':>6}  s")
    for name, (network, roots) in graphs():
        inputs, whole = simulation_inputs(network, roots)
        scheduler = RematScheduler(*inputs)
        nodes, views = inputs[0], inputs[4]
        for percent in (100, 90, 75, 60):
            budget = whole * percent // 100
            schedule = scheduler.schedule(budget)
            greedy = (
                greedy_extra_flops(schedule, nodes, views)
                if schedule is not None and schedule.fits
                else None
            )
            started = time.perf_counter()
            best, bound = optimal_extra_flops(scheduler, nodes, views, budget, arguments.seconds)
            seconds = time.perf_counter() - started
            ratio = f"{greedy / best:.2f}" if greedy is not None and best else "-"
            proven = "proven" if best is not None and best == bound else ""
            print(
                f"{name:<22} {percent:>5}% {greedy if greedy is not None else '-':>8} "
                f"{best if best is not None else '-':>8} "
                f"{round(bound) if bound is not None else '-':>8} {ratio:>6}  {seconds:.1f} "
                f"{proven}",
                flush=True,
            )


if __name__ == "__main__":
    main()

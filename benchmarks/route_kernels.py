"""Engine against recorded, kernel by kernel: where the engine's extra time per step goes.

    python -m benchmarks.route_kernels [--steps 300] [--rows 32] [--all]

Lowers the cifar10 model on both routes at `rows` images (32: one shard of the
`cifar10` workload, as each shard process runs it) and runs the two in turns in
this process, timing every kernel call: the forward kernels node by node (the same
node on both routes), and each call of the engine's backward sweep beside the
recorded plan's gradient node that runs the same kernel (the recording algebra
appends one node per call of the same sweep, in the same order). Prints medians
per step, the difference, the sums, and each route's time outside its kernels
(Python dispatch and bookkeeping). Run it with OPENBLAS_NUM_THREADS=1, as a shard
runs its products. `--all` prints every pair, not only those that differ by 0.01 ms
or more.

It wraps the plans' private step lists and the backward plan's calls, as
`profile_step.py` does: a measurement aid for this repository's own engineers.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time

from benchmarks.cifar10_model import CLASSES, batches, build
from topos import Tensor


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300, help="timed steps per route")
    parser.add_argument("--rows", type=int, default=32, help="images a step")
    parser.add_argument("--all", action="store_true", help="print every pair of kernels")
    arguments = parser.parse_args(argv)

    routes = {route: build(route, batch=arguments.rows, shards=1) for route in ROUTES}
    pool = batches(4, batch=arguments.rows)
    times: dict[tuple, list[float]] = collections.defaultdict(list)
    labels: dict[tuple, str] = {}
    for route, trainer in routes.items():
        feeds = _feeds(trainer, *pool[0])
        # One step first: the arenas and the backward plan exist from then on.
        trainer.program.gradients(
            trainer.plan.forward(trainer.parameters, feeds), trainer.parameters
        )
        nodes = trainer.network.nodes
        forward_nodes = trainer.program.forward_nodes
        steps = []
        backward = 0
        for index, kernel, *rest in trainer.plan._steps:
            if index < forward_nodes:
                key = (route, "forward", index)
            else:
                key = (route, "backward", backward)
                backward += 1
            labels[key] = f"{nodes[index].operation} {list(nodes[index].shape)}"
            steps.append((index, _timed(times[key], kernel), *rest))
        trainer.plan._steps = steps
        if route == "engine":
            plan = trainer.plan.backward_plan(trainer.network.index(trainer.loss, "benchmark"))
            calls = plan.calls()
            for position, (operation, shapes, attributes, kernel) in enumerate(calls):
                key = (route, "backward", position)
                labels[key] = f"{operation} {list(plan.simulation.calls[position].shape)}"
                calls[position] = (operation, shapes, attributes, _timed(times[key], kernel))

    totals: dict[str, list[float]] = collections.defaultdict(list)
    for step in range(arguments.steps):
        for route, trainer in routes.items():
            feeds = _feeds(trainer, *pool[step % len(pool)])
            start = time.perf_counter()
            run = trainer.plan.forward(trainer.parameters, feeds)
            trainer.program.gradients(run, trainer.parameters)
            totals[route].append(time.perf_counter() - start)

    def median(key) -> float:
        return statistics.median(times[key]) * 1000 if key in times else 0.0

    print(f"{'engine':>8} {'recorded':>8} {'diff':>7}  kernel (ms a step, medians)")
    for part in ("forward", "backward"):
        keys = sorted({key[2] for key in times if key[1] == part})
        sums = [0.0, 0.0]
        for position in keys:
            engine, recorded = (median((route, part, position)) for route in ROUTES)
            sums[0] += engine
            sums[1] += recorded
            label = labels.get(("engine", part, position)) or labels[("recorded", part, position)]
            mismatch = labels.get(("recorded", part, position), label).split()[0]
            if mismatch != label.split()[0]:
                label += f" (recorded: {mismatch})"
            if arguments.all or abs(engine - recorded) >= 0.01:
                name = f"%{position}" if part == "forward" else f"call {position}"
                print(f"{engine:8.3f} {recorded:8.3f} {engine - recorded:+7.3f}  {name} {label}")
        print(f"{sums[0]:8.3f} {sums[1]:8.3f} {sums[0] - sums[1]:+7.3f}  {part} kernels in all")
    for route in ROUTES:
        whole = statistics.median(totals[route]) * 1000
        kernels = sum(median(key) for key in times if key[0] == route)
        print(f"{route}: {whole:.3f} ms a step, {whole - kernels:.3f} outside its kernels")
    return 0


ROUTES = ("engine", "recorded")


def _feeds(trainer, images, labels) -> dict:
    return {
        trainer.images: Tensor.adopt(images),
        trainer.targets: Tensor.selection(labels, CLASSES),
    }


def _timed(into: list[float], kernel):
    """`kernel`, appending the seconds of each call to `into`."""

    def call(*operands, **attributes):
        start = time.perf_counter()
        result = kernel(*operands, **attributes)
        into.append(time.perf_counter() - start)
        return result

    return call


if __name__ == "__main__":
    sys.exit(main())

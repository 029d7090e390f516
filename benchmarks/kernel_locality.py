"""What a step loses to memory: each plan kernel's time inside the step against the same
call repeated at once, its operands, output and workspace still in cache.

    python -m benchmarks.kernel_locality [--workload cifar10|gpt|llama] [--route recorded]
                                         [--rows N] [--steps 20] [--top 20]

Trains one shard of the workload (its rows, or `--rows`) on the workload's BLAS threads
(one for the built-ins), times every kernel of the route's forward-only plan over
`--steps` steps (the median of each node's calls), then calls each kernel again with the
last step's operands, several times in a row on the same threads, and keeps the median
of those warm calls. A kernel whose output is written over one
of its operands (a bias added into its product) gets that operand's values back before
each warm call, so it repeats the step's arithmetic, not a drift of it.

Per operation it prints the step's time, the warm time and their ratio; the total says
how much of the step's kernel time is the data's way to the core rather than the
arithmetic. On the AMD EPYC (Zen 3, 512 KiB of L2 a core) cifar10's kernels took
1.10-1.15x their warm time in the step, gpt's 1.21-1.27x, llama's 1.19-1.47x: the
convolutions' products lose least (BLAS packs its operands), the passes that stream a
whole activation once (im2col, the pooling lanes, the small elementwise kernels) the
most (docs/performance/index.md, "A sixth look").
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import time
from dataclasses import replace

import numpy as np

from topos.training import Training
from topos.workloads import resolve

#: Warm calls of each kernel; their median is its warm time.
WARM_CALLS = 15


def _restorer(operands: tuple, keywords: dict):
    """A function putting back, before a warm call, every operand the call's output is
    written over (the same memory and shape), from a copy taken now."""
    out = keywords.get("out")
    if out is None:
        return lambda: None
    aliased = [
        operand
        for operand in operands
        if isinstance(operand, np.ndarray)
        and operand.shape == out.shape
        and np.shares_memory(operand, out)
    ]
    saved = [operand.copy() for operand in aliased]
    return lambda: [np.copyto(out, values) for values in saved]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="cifar10", help="a built-in workload")
    parser.add_argument("--route", default="recorded", choices=("recorded", "remat"))
    parser.add_argument("--rows", type=int, help="rows of the shard (default: the workload's)")
    parser.add_argument("--steps", type=int, default=20, help="steps timed")
    parser.add_argument("--top", type=int, default=20, help="operations to print")
    arguments = parser.parse_args(argv)

    workload = resolve(arguments.workload)
    rows = arguments.rows or workload.batch_size // workload.shards
    workload = replace(workload, shards=1, batch_size=rows)
    training = Training(workload, arguments.route, workload.dataset(None), arguments.steps + 3)
    for step in range(3):
        training.step(step)

    plan, nodes = training.program.plan, training.program.network.nodes
    in_step: dict[int, list[float]] = collections.defaultdict(list)
    last_call: dict[int, tuple] = {}

    def timed(index, kernel):
        def call(*operands, **keywords):
            start = time.perf_counter()
            result = kernel(*operands, **keywords)
            in_step[index].append(time.perf_counter() - start)
            last_call[index] = (kernel, operands, keywords)
            return result

        return call

    plan._steps = [(index, timed(index, kernel), *rest) for index, kernel, *rest in plan._steps]
    for step in range(3, 3 + arguments.steps):
        training.step(step)

    warm: dict[int, float] = {}
    # The warm calls on the BLAS threads the step's ran on (the workload's, one a shard).
    with training.program._blas_limit(), np.errstate(all="ignore"):
        for index, (kernel, operands, keywords) in last_call.items():
            restore = _restorer(operands, keywords)
            times = []
            for _ in range(WARM_CALLS):
                restore()
                start = time.perf_counter()
                kernel(*operands, **keywords)
                times.append(time.perf_counter() - start)
            warm[index] = statistics.median(times)

    step_ms: dict[str, float] = collections.defaultdict(float)
    warm_ms: dict[str, float] = collections.defaultdict(float)
    calls: collections.Counter[str] = collections.Counter()
    for index, times in in_step.items():
        operation = nodes[index].operation
        step_ms[operation] += statistics.median(times) * 1000
        warm_ms[operation] += warm[index] * 1000
        calls[operation] += 1

    total_step, total_warm = sum(step_ms.values()), sum(warm_ms.values())
    threads = training.program.blas_threads or "the process's"
    print(
        f"{arguments.workload} {arguments.route}, one shard of {rows} rows, "
        f"{threads} BLAS threads, {arguments.steps} steps"
    )
    print(
        f"kernels: {total_step:.2f} ms in the step, {total_warm:.2f} ms warm "
        f"({total_step / total_warm:.2f}x)"
    )
    print(f"{'step ms':>8} {'warm ms':>8} {'ratio':>6} {'calls':>5}  operation")
    ranked = sorted(step_ms, key=lambda operation: step_ms[operation], reverse=True)
    for operation in ranked[: arguments.top]:
        ratio = step_ms[operation] / warm_ms[operation] if warm_ms[operation] else float("nan")
        print(
            f"{step_ms[operation]:8.3f} {warm_ms[operation]:8.3f} {ratio:6.2f} "
            f"{calls[operation]:5d}  {operation}"
        )
    print(f"load average {os.getloadavg()[0]:.2f}")
    training.program.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

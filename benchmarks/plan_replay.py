"""Where a step of any workload goes, node by node, by replaying each kernel (issue 47).

    python -m benchmarks.plan_replay [--workload MODULE:ATTR] [--route recorded]
                                     [--repeat 200] [--top 25] [--by node|operation]

Trains the workload (default the test suite's user ResNet, a hand-written batch norm)
a few steps on one shard, then captures every kernel call of one step of the plan with
its real operands and replays each alone `--repeat` times: the median of those is the
kernel's own cost, free of the timer wrapped around every call that `profile_step.py`
adds (about a microsecond a call, as much as a small kernel). It prints the step's
median wall time, the kernels' sum, and the rest (the plan's Python per node, feeds,
the optimizer), then the kernels by node label and operand shapes, or by operation.

Each kernel is replayed on its operands' values at the call (copied when captured and
put back before each batch of 10: later nodes overwrite the arena, and values drifting to
inf or subnormal numbers would change the cost); a kernel whose `out` is one of its
operands (an in-place add) still changes them within a batch. Run with OPENBLAS_NUM_THREADS=1
(set by default here) and say the CPU and the load: the machines are shared.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent.parent
# The templates (`image_classifier:workload`, ...) are named as modules of examples/.
sys.path.insert(0, str(ROOT / "examples"))

from topos.training import Training  # noqa: E402
from topos.workloads import resolve  # noqa: E402


def _captured(plan, training: Training, step: int) -> list[tuple]:
    """(node index, kernel, operands, attributes, the operands' values) of every kernel
    call of one step: the operands are arena views that later nodes overwrite, so their
    values at the call are copied, to be put back before each replay."""
    calls = []

    def capture(index, kernel):
        def call(*operands, **attributes):
            values = [np.array(operand) for operand in operands]
            calls.append((index, kernel, operands, attributes, values))
            return kernel(*operands, **attributes)

        return call

    original = plan._steps
    plan._steps = [(index, capture(index, kernel), *rest) for index, kernel, *rest in original]
    try:
        training.step(step)
    finally:
        plan._steps = original
    return calls


def _replayed(call: tuple, repeat: int) -> float:
    """The median seconds of `repeat` calls of one captured kernel call, in batches of 10,
    its operands' values at the call put back before each batch (outside the timing)."""
    _, kernel, operands, attributes, values = call
    times = []
    for _ in range(max(1, repeat // 10)):
        for operand, value in zip(operands, values):
            if isinstance(operand, np.ndarray) and operand.flags.writeable:
                np.copyto(operand, value)
        start = time.perf_counter()
        for _ in range(10):
            kernel(*operands, **attributes)
        times.append((time.perf_counter() - start) / 10)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="tests.support.user_models:resnet_workload")
    parser.add_argument("--route", default="recorded", choices=("engine", "recorded"))
    parser.add_argument("--repeat", type=int, default=200, help="replays of each kernel")
    parser.add_argument("--steps", type=int, default=40, help="steps timed whole")
    parser.add_argument("--top", type=int, default=25, help="lines to print")
    parser.add_argument("--by", default="node", choices=("node", "operation"))
    arguments = parser.parse_args(argv)

    workload = resolve(arguments.workload)
    dataset = (
        workload.load_dataset(None) if workload.load_dataset is not None else workload.dataset(None)
    )
    training = Training(workload, arguments.route, dataset, 10_000)
    for step in range(5):
        training.step(step)
    walls = []
    for step in range(arguments.steps):
        start = time.perf_counter()
        training.step(5 + step)
        walls.append(time.perf_counter() - start)
    step_seconds = statistics.median(walls)

    plan = training.plan
    nodes = plan._program
    calls = _captured(plan, training, 5 + arguments.steps)
    totals: dict[str, float] = collections.defaultdict(float)
    counts: dict[str, int] = collections.defaultdict(int)
    for call in calls:
        node = nodes[call[0]]
        if arguments.by == "operation":
            key = node.operation
        else:
            shapes = " ".join(str(list(nodes[i].shape)) for i in node.inputs)
            key = f"{node.label()} {list(node.shape)} <- {shapes}"
        totals[key] += _replayed(call, arguments.repeat)
        counts[key] += 1
    kernels = sum(totals.values())
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"{arguments.workload} {arguments.route}: load {load}")
    print(
        f"step {step_seconds * 1e3:.3f} ms (median of {arguments.steps}); {len(calls)} kernel "
        f"calls replayed: {kernels * 1e3:.3f} ms ({kernels / step_seconds:.0%}); the rest "
        f"(plan's Python, feeds, optimizer) {(step_seconds - kernels) * 1e3:.3f} ms, "
        f"{(step_seconds - kernels) / len(calls) * 1e6:.2f} us a call"
    )
    print(f"{'ms/step':>8} {'calls':>5} {'us/call':>8}  {arguments.by}")
    for key in sorted(totals, key=totals.get, reverse=True)[: arguments.top]:
        each = totals[key] / counts[key]
        print(f"{totals[key] * 1e3:8.3f} {counts[key]:5d} {each * 1e6:8.2f}  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

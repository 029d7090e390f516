"""Where a training step's time goes, kernel by kernel, on one route.

    python -m benchmarks.profile_step [engine|recorded] [--steps 5] [--top 25]
                                      [--workload cifar10-winograd|gpt|llama]

Trains the seed model (or a language model: `gpt`, `llama`, one shard of its
batch with its own AdamW) a few warm-up steps, then times every kernel call of a
few more: the plan's forward kernels by node, and (on the engine route) the
eager backward sweep's kernels by operation and operand shapes. Each line gives
the kernel's wall time, its thread CPU time and the minor page faults it took,
per step; the summary splits the step into kernels and everything else (Python
dispatch and bookkeeping). Run with OPENBLAS_NUM_THREADS=1 to see the matrix
products' full cost on one core, and with MALLOC_MMAP_THRESHOLD_=65536 (what
`topos grade` sets) to see what fresh mappings cost.

To compare the routes, run `route_kernels.py` (both in one process, in turns), not this
script once a route: the machine's slow and fast modes last seconds, and two runs
minutes apart timed the same kernel (convolution_images `[16384, 32]`) at 3.7 and 5.7
ms, more than the routes ever differ.

It wraps the plan's private step list and the eager algebra's `apply`: a
measurement aid for this repository's own engineers, not an API.
"""

from __future__ import annotations

import argparse
import collections
import resource
import sys
import time
from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from benchmarks.cifar10_model import batches, build
from topos.autodiff.eager_algebra import EagerAlgebra

Totals = collections.defaultdict

#: Language-model workloads, trained through `Training` with their own optimizer.
LANGUAGE_MODELS = ("gpt", "llama")


def _language_model(route: str, name: str, shards: int):
    """The workload's training at one shard's rows (`shards` of its batch size) on its
    synthetic text, and a `train(step)` that steps it; the optimizer's update is timed
    as one line of its own."""
    from topos.training import Training
    from topos.workloads import resolve

    workload = resolve(name)
    rows = workload.batch_size // workload.shards
    workload = replace(workload, shards=shards, batch_size=rows * shards)
    training = Training(workload, route, workload.dataset(None), 10_000)
    update = training.memory.update

    def timed_update(optimizer, gradients) -> None:
        start = time.perf_counter()
        update(optimizer, gradients)
        OPTIMIZER_TIME[0] += time.perf_counter() - start

    training.memory.update = timed_update
    trainer = SimpleNamespace(network=training.program.network, plan=training.plan)
    return trainer, training.step


#: Seconds spent in the optimizer's update over the profiled steps (language models).
OPTIMIZER_TIME = [0.0]


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("route", nargs="?", default="recorded", choices=("engine", "recorded"))
    parser.add_argument("--steps", type=int, default=5, help="profiled steps")
    parser.add_argument("--top", type=int, default=25, help="lines to print")
    parser.add_argument(
        "--workload",
        default="cifar10",
        help="cifar10 or a variant of it (cifar10-winograd), or a language model (gpt, llama)",
    )
    parser.add_argument(
        "--shards",
        type=int,
        default=1,
        help="batch shards (default 1: one plan, so every kernel is timed on one thread)",
    )
    arguments = parser.parse_args(argv)

    if arguments.workload in LANGUAGE_MODELS:
        trainer, train = _language_model(arguments.route, arguments.workload, arguments.shards)
    else:
        trainer = build(arguments.route, shards=arguments.shards, workload=arguments.workload)
        pool = batches(4)

        def train(step: int) -> None:
            trainer.step(*pool[step % 4])

    for step in range(3):
        train(step)

    wall: Totals[tuple, float] = collections.defaultdict(float)
    cpu: Totals[tuple, float] = collections.defaultdict(float)
    faults: Totals[tuple, int] = collections.defaultdict(int)

    def timed(key, kernel):
        def call(*operands, **attributes):
            faults_before, cpu_before = _faults(), time.thread_time()
            start = time.perf_counter()
            result = kernel(*operands, **attributes)
            wall[key] += time.perf_counter() - start
            cpu[key] += time.thread_time() - cpu_before
            faults[key] += _faults() - faults_before
            return result

        return call

    nodes = trainer.network.nodes
    plan = trainer.plan
    plan._steps = [
        (index, timed((f"%{index}", nodes[index].label(), str(nodes[index].shape)), kernel), *rest)
        for index, kernel, *rest in plan._steps
    ]

    planned_apply = EagerAlgebra.apply

    def apply(self, operation, operands, **attributes):
        # Through the algebra's own apply, so the sweep still writes into its planned
        # slots (a bare kernel call would allocate, and count faults the engine never takes).
        shapes = " ".join(str(list(np.shape(operand))) for operand in operands)
        key = ("backward", operation, shapes)

        def kernel(*operands, **attributes):
            return planned_apply(self, operation, operands, **attributes)

        return timed(key, kernel)(*operands, **attributes)

    EagerAlgebra.apply = apply

    steps = arguments.steps
    OPTIMIZER_TIME[0] = 0.0
    faults_before, start, cpu_start = _faults(), time.perf_counter(), time.thread_time()
    for step in range(steps):
        train(3 + step)
    elapsed = (time.perf_counter() - start) / steps * 1000
    step_cpu = (time.thread_time() - cpu_start) / steps * 1000
    kernels_cpu = sum(cpu.values()) / steps * 1000
    total_faults = (_faults() - faults_before) / steps
    kernels = sum(wall.values()) / steps * 1000

    print(f"route {arguments.route}: {elapsed:.2f} ms/step, {total_faults:.0f} minor faults/step")
    print(
        f"this thread's CPU: {step_cpu:.2f} ms/step, kernels {kernels_cpu:.2f}, everything else "
        f"{step_cpu - kernels_cpu:.2f} (other threads' and processes' not counted)"
    )
    print(
        f"kernels {kernels:.2f} ms/step ({kernels / elapsed:.0%}); everything else "
        f"{elapsed - kernels:.2f} ms/step ({(elapsed - kernels) / elapsed:.0%})"
    )
    if arguments.workload in LANGUAGE_MODELS:
        print(f"optimizer update {OPTIMIZER_TIME[0] / steps * 1000:.2f} ms/step (not a kernel)")
    print(f"{'wall ms':>8} {'cpu ms':>8} {'faults':>7}  kernel")
    ranked = sorted(wall, key=wall.get, reverse=True)[: arguments.top]
    for key in ranked:
        print(
            f"{wall[key] / steps * 1000:8.2f} {cpu[key] / steps * 1000:8.2f} "
            f"{faults[key] / steps:7.0f}  {'  '.join(key)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Shards as threads against shards as forked processes: issue 18's second lever, measured.

    python -m benchmarks.shard_processes [--workload cifar10] [--route recorded] [--steps 40]

The same route of a two-shard workload computes the same batches two ways, alternating
in rounds: with its shards on threads of one process (`cifar10-threads`, `gpt-threads`),
and with the shards past the first in forked children (`Workload.shard_processes`, the
library's `ShardProcesses`: the built-in workloads' default on Linux). Both ways must
give the same loss and gradient bits at every step. Prints the median ms per step of
each, their ratio, and the CPU time each spends, children included.

It times `compute` alone (forward and gradients, no optimizer); `step_time.py
--processes` times whole steps beside PyTorch.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import statistics
import time
from pathlib import Path

import numpy as np

from topos.training import Training
from topos.workloads import resolve

WAYS = ("threads", "processes")


def _cpu_seconds(children: list[int]) -> float:
    """CPU seconds of this process and of its running children (from /proc: a child's
    rusage counts only once it has been waited for)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    total = own.ru_utime + own.ru_stime
    ticks = os.sysconf("SC_CLK_TCK")
    for child in children:
        fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def _check(expected, got, step: int) -> None:
    loss, gradients = expected
    other_loss, other_gradients = got
    assert np.float32(loss).tobytes() == np.float32(other_loss).tobytes(), f"loss differs at {step}"
    for symbol, tensor in gradients.items():
        other = other_gradients.by_index(symbol.index)
        assert tensor.numpy().tobytes() == other.numpy().tobytes(), (
            f"gradient {symbol.index} differs at step {step}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workload", default="cifar10")
    parser.add_argument("--route", default="recorded", choices=("engine", "recorded"))
    parser.add_argument("--steps", type=int, default=40, help="timed steps per way")
    parser.add_argument("--rounds", type=int, default=4)
    arguments = parser.parse_args()
    workload = resolve(arguments.workload)
    if workload.shards != 2:
        raise SystemExit(
            f"shard_processes: {arguments.workload} has {workload.shards} shards, not 2"
        )
    dataset = workload.dataset(None)
    # Two trainings of the same workload start from the same parameters; neither updates
    # them here, so both compute the same batches from the same values.
    trainings = {
        way: Training(
            dataclasses.replace(workload, shard_processes=way == "processes"),
            arguments.route,
            dataset,
            arguments.steps,
        )
        for way in WAYS
    }
    processes = trainings["processes"].program
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    cpu = dict.fromkeys(WAYS, 0.0)
    try:
        for step in range(8):  # warm-up (the children fork at the first), and a check
            _check(*(trainings[way].compute(step) for way in WAYS), step)
        per_round = max(1, arguments.steps // arguments.rounds)
        for _ in range(arguments.rounds):
            for way, training in trainings.items():
                children = processes.shard_process_ids
                before = _cpu_seconds(children)
                for step in range(per_round):
                    start = time.perf_counter()
                    training.compute(step % 8)
                    times[way].append(time.perf_counter() - start)
                cpu[way] += _cpu_seconds(children) - before
        for step in range(8):
            _check(*(trainings[way].compute(step) for way in WAYS), step)
    finally:
        processes.close()
    count = len(times["threads"])
    load = os.getloadavg()[0]
    print(f"{arguments.workload} {arguments.route}, {count} steps each, load {load:.2f}")
    for way in WAYS:
        median = statistics.median(times[way]) * 1e3
        fastest = min(times[way]) * 1e3
        print(
            f"{way:<10} {median:7.2f} ms/step (min {fastest:.2f}), "
            f"cpu {cpu[way] / count * 1e3:.1f} ms/step"
        )
    ratio = statistics.median(times["processes"]) / statistics.median(times["threads"])
    print(f"processes/threads {ratio:.3f}x; loss and gradient bits identical")


if __name__ == "__main__":
    main()

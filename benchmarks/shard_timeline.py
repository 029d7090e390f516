"""Where a shard-process step's wall time goes: each process's compute, the wait for the
slower one, and the parent's work alone before and after.

    python -m benchmarks.shard_timeline [--workload cifar10] [--route recorded]
                                        [--steps 200] [--pin PARENT,CHILD]

Trains the workload (two shards, the second in a forked child, as `topos grade` runs the
built-ins on Linux) through `Training.step`, and stamps every step with one clock both
processes read (`time.perf_counter`, CLOCK_MONOTONIC): the child stamps the start and end
of its shard's compute into shared memory, the parent its own. Prints the median of each
phase over the steps:

- before submit: the parent's work from the step's start (the batch's feeds);
- submit: the parameters and the child's rows copied into shared memory, the child told;
- own shard / child's shard: each process's forward and gradients;
- wait: how much later than the parent's own shard the child's ended (negative when it
  ended first); the answer read (the child's gradients copied into shared memory, one
  byte back), and the shards' results made of it;
- after: the shards' mean and the optimizer's update, the parent alone.

`--pin 0,1` puts the parent on CPU 0 and the child on CPU 1 (`sched_setaffinity`); run
it with `--pin 1,0` too: a vCPU that runs the same shard slower makes the other process
wait, whichever it is.
"""

from __future__ import annotations

import argparse
import dataclasses
import mmap
import os
import statistics
import sys
import time

import numpy as np

from topos.engine.plan import Plan
from topos.training import RouteProgram, Training
from topos.training import shard_processes as shard_module
from topos.workloads import resolve

#: The child's stamps: the start and the end of its shard's compute, in seconds.
CHILD_STAMPS = np.frombuffer(mmap.mmap(-1, 16), dtype=np.float64)


def _stamp(parent: int, child_cpu: int | None, stamps: dict[str, float]) -> None:
    """Makes a shard's compute stamp its start and end: the parent's (`_compute_shard`)
    into `stamps`, the child's (its plan's `forward`, then `gradients`, which its loop
    calls itself) into shared memory, pinning the child first when asked."""
    compute, forward, gradients = RouteProgram._compute_shard, Plan.forward, RouteProgram.gradients

    def own(self, shard, parameters, feeds):
        start = time.perf_counter()
        result = compute(self, shard, parameters, feeds)
        stamps["own start"], stamps["own end"] = start, time.perf_counter()
        return result

    def child_forward(self, *arguments, **keywords):
        if os.getpid() != parent:
            if child_cpu is not None and os.sched_getaffinity(0) != {child_cpu}:
                os.sched_setaffinity(0, {child_cpu})
            CHILD_STAMPS[0] = time.perf_counter()
        return forward(self, *arguments, **keywords)

    def child_gradients(self, run, parameters):
        result = gradients(self, run, parameters)
        if os.getpid() != parent:
            CHILD_STAMPS[1] = time.perf_counter()
        return result

    read = shard_module._read_exactly

    def answered(descriptor: int, count: int) -> bytes:
        data = read(descriptor, count)
        if os.getpid() == parent:
            stamps["answer read"] = time.perf_counter()
        return data

    RouteProgram._compute_shard = own
    Plan.forward = child_forward
    RouteProgram.gradients = child_gradients
    shard_module._read_exactly = answered


def _timed(function, stamps: dict[str, float], name: str):
    """`function` stamping its start and end as `name start` and `name end`."""

    def timed(*arguments):
        stamps[f"{name} start"] = time.perf_counter()
        result = function(*arguments)
        stamps[f"{name} end"] = time.perf_counter()
        return result

    return timed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="cifar10", help="a built-in, run in two shards")
    parser.add_argument("--route", default="recorded", choices=("engine", "recorded", "remat"))
    parser.add_argument("--steps", type=int, default=200, help="steps timed")
    parser.add_argument("--pin", help="PARENT,CHILD: the CPUs the two processes run on")
    arguments = parser.parse_args(argv)
    if not shard_module.available():
        print("shard processes need Linux's fork", file=sys.stderr)
        return 2

    parent_cpu = child_cpu = None
    if arguments.pin:
        parent_cpu, child_cpu = (int(part) for part in arguments.pin.split(","))
        os.sched_setaffinity(0, {parent_cpu})
    stamps: dict[str, float] = {}
    _stamp(os.getpid(), child_cpu, stamps)
    workload = dataclasses.replace(resolve(arguments.workload), shards=2, shard_processes=True)
    training = Training(workload, arguments.route, workload.dataset(None), arguments.steps + 5)
    for step in range(5):  # the fork, the arenas, the caches
        training.step(step)
    processes = training.program._processes
    processes.submit = _timed(processes.submit, stamps, "submit")
    processes.collect = _timed(processes.collect, stamps, "collect")

    phases: dict[str, list[float]] = {}
    for step in range(5, 5 + arguments.steps):
        start = time.perf_counter()
        training.step(step)
        end = time.perf_counter()
        child_start, child_end = CHILD_STAMPS
        measured = {
            "step": end - start,
            "before submit": stamps["submit start"] - start,
            "submit": stamps["submit end"] - stamps["submit start"],
            "child's start after submit": child_start - stamps["submit end"],
            "own shard": stamps["own end"] - stamps["own start"],
            "child's shard": child_end - child_start,
            "child's end after own": child_end - stamps["own end"],
            "answer read after child's end": stamps["answer read"] - child_end,
            "collect's end after the answer": stamps["collect end"] - stamps["answer read"],
            "after (mean, update)": end - stamps["collect end"],
        }
        for name, seconds in measured.items():
            phases.setdefault(name, []).append(seconds * 1000)

    where = f", parent on CPU {parent_cpu}, child on CPU {child_cpu}" if arguments.pin else ""
    print(f"{arguments.workload} {arguments.route}, {arguments.steps} steps{where}")
    print(f"{'median ms':>10}  phase")
    for name, values in phases.items():
        print(f"{statistics.median(values):10.2f}  {name}")
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

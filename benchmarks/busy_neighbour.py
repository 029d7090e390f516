"""A workload of one's own beside another BLAS program: its step time busy over quiet.

    python -m benchmarks.busy_neighbour [--steps 20] [--seconds 20] [--route recorded]
                                        [--shards 1,2] [--blas default,process]

The workload is cifar10's model written as a user writes one (`convnet_workload` with
the workload's defaults: its shards on threads, `blas_threads` as the library sets it),
trained in a worker process of its own, once per configuration:

- `--shards`: one shard, or two (on threads, a user's default; `2p` puts the second in
  a forked process, as the built-ins do on Linux);
- `--blas default`: the library's default BLAS threads a shard (`Workload.blas_threads`),
  `--blas process`: `blas_threads=None`, the process's BLAS as NumPy set it up (two
  threads on two cores: how a one-shard workload ran before the default was one).

Each configuration's worker times a quiet round, then a busy round beside the
neighbour -- a NumPy float32 1024x1024 product loop in a process of its own, on its
default threads (no BLAS variables in its environment) -- then a second quiet round. The
ratio is the busy round's median step over the quiet rounds' (their median steps
averaged). A round stops after `--steps` steps or `--seconds` seconds, whichever comes
first (a collapsed step can take seconds). Load average before and after is printed:
the quiet figures mean something only when no one else loads the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: A configuration's worker: this module, run from the root.
WORKER = (sys.executable, "-m", "benchmarks.busy_neighbour", "--worker")
BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

NEIGHBOUR = """
import numpy as np
a = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
b = a.copy()
while True:
    a @ b
"""


def _worker(shards: str, blas: str, route: str) -> None:
    from benchmarks.cifar10_model import CLASSES, batches
    from topos import Tensor
    from topos.datasets import load_cifar10
    from topos.training import RouteProgram
    from topos.training.workload import StepSchedule
    from topos.workloads.convnet_workload import convnet_workload

    processes = shards.endswith("p")
    count = int(shards.rstrip("p"))
    workload = convnet_workload(
        "mine",
        "cifar10's model, as a workload of one's own",
        channels=3,
        side=32,
        filters=(16, 32, 64),
        kernel_seeds=(21, 22, 23),
        head_seed=24,
        classes=10,
        load_dataset=load_cifar10,
        learning_rate=StepSchedule(0.05, 0.005),
        shuffle_state=3,
        shards=count,
        shard_processes=processes,
    )
    if blas == "process":
        from dataclasses import replace

        workload = replace(workload, blas_threads=None)
    program = RouteProgram(workload, route)
    recording = program.recording
    parameters = program.network.parameters()
    pool = batches(4, 64)

    def step(index: int) -> None:
        images, labels = pool[index % len(pool)]
        feeds = {
            recording.images: Tensor.adopt(images),
            recording.targets: Tensor.selection(labels, CLASSES),
        }
        program.compute(parameters, feeds)

    for index in range(5):
        step(index)
    print(json.dumps({"ready": True, "blas_threads": program.blas_threads}), flush=True)
    for line in sys.stdin:
        steps, seconds = json.loads(line)
        times = []
        started = time.perf_counter()
        while len(times) < steps and time.perf_counter() - started < seconds:
            before = time.perf_counter()
            step(len(times))
            times.append(time.perf_counter() - before)
        print(json.dumps(times), flush=True)
    program.close()


def _load() -> float:
    return os.getloadavg()[0]


def _blas_kernel() -> str:
    from threadpoolctl import threadpool_info

    return ", ".join(
        f"{pool['internal_api']} {pool['version']} {pool.get('architecture')} "
        f"{pool['num_threads']} threads"
        for pool in threadpool_info()
        if pool["user_api"] == "blas"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="most steps a round")
    parser.add_argument("--seconds", type=float, default=20.0, help="longest a round")
    parser.add_argument("--route", default="recorded", choices=("engine", "recorded"))
    parser.add_argument("--shards", default="1,2", help="comma-separated: 1, 2, 2p")
    parser.add_argument("--blas", default="default,process", help="default and/or process")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.worker:
        _worker(*arguments.worker)
        return
    import numpy  # noqa: F401  (for the BLAS description)

    print(f"load average {_load():.2f}; BLAS: {_blas_kernel()}")
    neighbour_environment = {k: v for k, v in os.environ.items() if k not in BLAS_VARIABLES}
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    rows = []
    for shards in arguments.shards.split(","):
        for blas in arguments.blas.split(","):
            worker = subprocess.Popen(
                [*WORKER, shards, blas, arguments.route],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=ROOT,
                env=environment,
            )
            ready = json.loads(worker.stdout.readline())

            def round_(worker=worker) -> float:
                worker.stdin.write(json.dumps([arguments.steps, arguments.seconds]) + "\n")
                worker.stdin.flush()
                times = json.loads(worker.stdout.readline())
                return 1000 * statistics.median(times), len(times)

            quiet_before, _ = round_()
            neighbour = subprocess.Popen(
                [sys.executable, "-c", NEIGHBOUR], env=neighbour_environment
            )
            try:
                time.sleep(1.0)
                busy, busy_steps = round_()
            finally:
                neighbour.kill()
                neighbour.wait()
            time.sleep(0.5)
            quiet_after, _ = round_()
            worker.stdin.close()
            worker.wait()
            quiet = (quiet_before + quiet_after) / 2
            rows.append((shards, blas, ready["blas_threads"], quiet, busy, busy_steps))
            print(
                f"shards {shards:>2}  blas {blas:<8} (threads {ready['blas_threads']}): quiet "
                f"{quiet_before:8.2f} / {quiet_after:8.2f} ms, busy {busy:9.2f} ms "
                f"({busy_steps} steps): {busy / quiet:6.2f}x   load {_load():.2f}",
                flush=True,
            )
    print(f"load average {_load():.2f}")


if __name__ == "__main__":
    main()

"""Time per training step of the cifar10 seed model: engine, recorded, and PyTorch.

    python benchmarks/step_time.py [--rounds 5] [--steps 20] [--warmup 5] [--out results/...]

Each route trains in its own worker process (this file run with `--worker ROUTE`),
speaking JSON lines over its pipes. The parent interleaves the rounds: every
worker times `--steps` steps in round 1, then every worker in round 2, and so
on, so a busy spell on the machine falls on all routes alike. After the warm-up
steps, the median ms/step over every timed step is each route's figure; the
ratios divide by PyTorch's median (a twin of the same model, batch, initial
weights and plain SGD, trained when `import torch` works, in its default NCHW layout
and again as `channels_last`; otherwise the
comparison is skipped and said so). Both topos routes must report the same loss
bits at every step. Prints a table (with CPU time and minor page faults per step,
from each worker's rusage) and writes the JSON to results/.

PyTorch is never a dependency of the project: it is only imported here, in its
own worker, when installed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TOPOS_ROUTES = ("engine", "recorded")
LEARNING_RATE = 0.05
BATCH = 64
POOL = 8  # distinct batches, cycled


# Workers ---------------------------------------------------------------------------------


def _topos_worker(route: str):
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    import numpy as np
    from cifar10_model import batches, build

    trainer = build(route, BATCH)
    pool = batches(POOL, BATCH)
    state = {"step": 0}

    def step() -> int:
        images, labels = pool[state["step"] % POOL]
        state["step"] += 1
        loss = trainer.step(images, labels, LEARNING_RATE)
        return int(np.float32(loss).view(np.uint32))

    return step


def _torch_worker(channels_last: bool = False):
    import numpy as np
    import torch

    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    from cifar10_model import batches, build

    # The same initial weights as the topos model (topos keeps the head as [in, out]).
    reference = build("engine", BATCH)
    arrays = [tensor.numpy() for _, tensor in reference.parameters.items()]
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(1024, 10),
    )
    layers = [model[0], model[3], model[6], model[10]]
    with torch.no_grad():
        for position, layer in enumerate(layers):
            weights, bias = arrays[2 * position], arrays[2 * position + 1]
            if position == 3:
                weights = weights.T
            layer.weight.copy_(torch.from_numpy(np.array(weights)))
            layer.bias.copy_(torch.from_numpy(np.array(bias)))
    layout = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(memory_format=layout)
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    pool = [
        (
            torch.from_numpy(images.copy()).contiguous(memory_format=layout),
            torch.from_numpy(labels.astype(np.int64)),
        )
        for images, labels in batches(POOL, BATCH)
    ]
    state = {"step": 0}

    def step() -> int:
        images, labels = pool[state["step"] % POOL]
        state["step"] += 1
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        return int(np.float32(loss.item()).view(np.uint32))

    return step


def worker(route: str) -> int:
    """Serves one route: each input line `{"steps": n}` trains n steps and answers
    with their times (ms) and loss bits."""
    if route.startswith("pytorch"):
        step = _torch_worker(channels_last=route == "pytorch-channels-last")
    else:
        step = _topos_worker(route)
    info = {"ready": route, "pid": os.getpid()}
    if route.startswith("pytorch"):
        import torch

        info["torch"] = torch.__version__
        info["threads"] = torch.get_num_threads()
    print(json.dumps(info), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        times, losses = [], []
        before = resource.getrusage(resource.RUSAGE_SELF)
        for _ in range(int(request["steps"])):
            start = time.perf_counter()
            losses.append(step())
            times.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_SELF)
        usage = {
            "cpu_ms": ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
            * 1000,
            "system_ms": (after.ru_stime - before.ru_stime) * 1000,
            "minor_faults": after.ru_minflt - before.ru_minflt,
        }
        print(json.dumps({"times": times, "losses": losses, "usage": usage}), flush=True)
    return 0


# Parent ----------------------------------------------------------------------------------


def torch_available() -> bool:
    """Whether a worker could import torch (checked in a subprocess, to keep this one lean)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import torch"], capture_output=True, text=True, check=False
    )
    return probe.returncode == 0


class Worker:
    """A route's worker process."""

    def __init__(
        self,
        route: str,
        environment: dict[str, str] | None = None,
        checkout: Path | None = None,
        label: str | None = None,
    ) -> None:
        self.route = label or route
        script = Path(__file__) if checkout is None else checkout / "benchmarks" / "step_time.py"
        self.process = subprocess.Popen(
            [sys.executable, str(script), "--worker", route],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            env={**os.environ, **(environment or {})},
        )
        self.info = self._read()
        self.times: list[float] = []
        self.losses: list[int] = []
        self.usage = {"cpu_ms": 0.0, "system_ms": 0.0, "minor_faults": 0}

    def _read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.route} exited with {self.process.wait()}")
        return json.loads(line)

    def train(self, steps: int) -> dict:
        self.process.stdin.write(json.dumps({"steps": steps}) + "\n")
        self.process.stdin.flush()
        answer = self._read()
        self.times += answer["times"]
        self.losses += answer["losses"]
        for key, value in answer["usage"].items():
            self.usage[key] += value
        return answer

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def environment() -> dict:
    """What the figures depend on: threads, BLAS core type, load, versions."""
    import numpy as np

    keys = ("OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "environment": {key: os.environ.get(key) for key in keys},
        "machine": platform.machine(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per round")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--no-torch", action="store_true", help="skip the PyTorch twin")
    parser.add_argument(
        "--keep-freed-memory",
        action="store_true",
        help="run the topos workers with glibc keeping freed memory for reuse "
        "(MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_): an estimate of what a static "
        "arena would save, not how topos runs by default",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another checkout of topos (for example `git worktree add /tmp/base main`): its "
        "routes run too, as engine@base and recorded@base, interleaved with these",
    )
    parser.add_argument("--out", type=Path, help="where to write the JSON")
    arguments = parser.parse_args(argv)
    if arguments.worker:
        return worker(arguments.worker)

    routes = list(TOPOS_ROUTES)
    skipped = None
    if arguments.no_torch:
        skipped = "not asked for (--no-torch)"
    elif torch_available():
        routes += ["pytorch", "pytorch-channels-last"]
    else:
        skipped = "torch cannot be imported here"
    allocator = {}
    if arguments.keep_freed_memory:
        allocator = {"MALLOC_MMAP_THRESHOLD_": str(2**30), "MALLOC_TRIM_THRESHOLD_": str(2**31)}
    workers = [Worker(route, allocator if route in TOPOS_ROUTES else None) for route in routes]
    if arguments.baseline:
        workers += [
            Worker(route, allocator, arguments.baseline.resolve(), f"{route}@base")
            for route in TOPOS_ROUTES
        ]
    try:
        for worker_process in workers:
            worker_process.train(arguments.warmup)
            worker_process.times.clear()
            worker_process.usage = dict.fromkeys(worker_process.usage, 0)
        for round_number in range(arguments.rounds):
            for worker_process in workers if round_number % 2 == 0 else reversed(workers):
                worker_process.train(arguments.steps)
    finally:
        for worker_process in workers:
            worker_process.close()

    results = {}
    for worker_process in workers:
        times = worker_process.times
        quartiles = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
        results[worker_process.route] = {
            "median_ms": statistics.median(times),
            "q1_ms": quartiles[0],
            "q3_ms": quartiles[2],
            "min_ms": min(times),
            "steps_timed": len(times),
            "cpu_ms_per_step": worker_process.usage["cpu_ms"] / len(times),
            "system_ms_per_step": worker_process.usage["system_ms"] / len(times),
            "minor_faults_per_step": worker_process.usage["minor_faults"] / len(times),
            "info": worker_process.info,
        }
    by_route = {worker_process.route: worker_process for worker_process in workers}
    parity = by_route["engine"].losses == by_route["recorded"].losses
    if arguments.baseline:
        parity = parity and by_route["engine@base"].losses == by_route["recorded@base"].losses
    reference = results.get("pytorch", {}).get("median_ms")
    channels_last = results.get("pytorch-channels-last", {}).get("median_ms")
    for figures in results.values():
        figures["vs_pytorch"] = figures["median_ms"] / reference if reference else None
        figures["vs_pytorch_channels_last"] = (
            figures["median_ms"] / channels_last if channels_last else None
        )
    report = {
        "benchmark": "step_time",
        "workload": "cifar10 seed model, batch 64, SGD 0.05, synthetic normal batches",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "rounds": arguments.rounds,
        "steps_per_round": arguments.steps,
        "warmup": arguments.warmup,
        "routes": results,
        "pytorch_skipped": skipped,
        "loss_bits_identical": parity,
        "steps_compared": len(by_route["engine"].losses),
        "topos_allocator": "keeps freed memory (estimate)" if allocator else "default",
        "recorded_vs_engine": results["recorded"]["median_ms"] / results["engine"]["median_ms"],
        "baseline": str(arguments.baseline) if arguments.baseline else None,
        "environment": environment(),
    }
    print(
        f"{'route':<22} {'ms/step':>9} {'q1':>8} {'q3':>8} {'min':>8} {'x pytorch':>10} "
        f"{'x ch-last':>10} {'cpu ms':>8} {'faults':>8}"
    )
    for route, figures in results.items():
        ratio = f"{figures['vs_pytorch']:.2f}x" if figures["vs_pytorch"] else "-"
        last = figures["vs_pytorch_channels_last"]
        last = f"{last:.2f}x" if last else "-"
        print(
            f"{route:<22} {figures['median_ms']:9.2f} {figures['q1_ms']:8.2f} "
            f"{figures['q3_ms']:8.2f} {figures['min_ms']:8.2f} {ratio:>10} {last:>10} "
            f"{figures['cpu_ms_per_step']:8.1f} {figures['minor_faults_per_step']:8.0f}"
        )
    if allocator:
        print("topos workers ran with glibc keeping freed memory (an arena's estimate)")
    if skipped:
        print(f"pytorch: skipped the comparison ({skipped})")
    print(
        f"recorded/engine {report['recorded_vs_engine']:.2f}x; loss bits "
        f"{'identical' if parity else 'DIFFER'} over {report['steps_compared']} steps; "
        f"load average {report['environment']['load_average'][0]:.2f}"
    )
    out = arguments.out or ROOT / "results" / "step_time.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return 0 if parity else 1


if __name__ == "__main__":
    sys.exit(main())

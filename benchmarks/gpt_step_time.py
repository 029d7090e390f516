"""Time per training step of the `gpt` workload: engine, recorded, and its PyTorch twin.

    python benchmarks/gpt_step_time.py [--rounds 10] [--steps 10] [--warmup 5] [--out ...]

Each runs in its own worker process (this file run with `--worker ROUTE`), speaking JSON
lines over its pipes; the parent interleaves the rounds (every worker times `--steps`
steps in round 1, then every worker in round 2, the order reversed every other round),
so a busy spell on the shared machine falls on all of them alike. The topos routes
train exactly what `topos grade --workload gpt` trains (the workload's Training: its
batches, its two shards, AdamW); the twin (benchmarks/gpt_twin.py) starts from the
same weights, copied by name, and trains on the same batches with the same AdamW, in
PyTorch's default threads (`--torch-threads 1` adds it at one thread too, as
`pytorch@1`). Both topos routes must report the same loss bits at every
step. Prints the median ms/step, CPU time and minor page faults per step and the ratio
to PyTorch, and writes the JSON to results/.

PyTorch is never a dependency of the project: it is only imported here, in its own
worker, when installed.
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


def _training(route: str):
    sys.path.insert(0, str(ROOT))
    from topos.training import Training
    from topos.workloads import resolve

    workload = resolve("gpt")
    return Training(workload, route, workload.dataset(None), 10_000)


def _topos_worker(route: str):
    import numpy as np

    training = _training(route)
    state = {"step": 0}

    def step() -> int:
        loss = training.step(state["step"])
        state["step"] += 1
        return int(np.float32(loss).view(np.uint32))

    return step


def _torch_worker():
    import numpy as np
    import torch

    threads = os.environ.get("GPT_TORCH_THREADS")
    if threads:
        torch.set_num_threads(int(threads))

    sys.path.insert(0, str(HERE))
    from gpt_twin import loss, optimizer, twin

    # The batches and initial weights of the topos workload (no topos step is run).
    training = _training("recorded")
    named = {name: tensor.numpy() for name, tensor in training.parameters.named().items()}
    model = twin(named)
    adamw = optimizer(model)
    inputs = training.recording.inputs
    state = {"step": 0}

    def step() -> int:
        feeds = training.feeds(state["step"])
        state["step"] += 1
        tokens = torch.from_numpy(feeds[inputs["tokens"]].numpy().astype(np.int64))
        targets = torch.from_numpy(feeds[inputs["targets"]].numpy().astype(np.int64))
        adamw.zero_grad(set_to_none=True)
        value = loss(model, tokens, targets)
        value.backward()
        adamw.step()
        return int(np.float32(value.item()).view(np.uint32))

    return step


def worker(route: str) -> int:
    """Serves one route: each input line `{"steps": n}` trains n steps and answers with
    their times (ms), loss bits and rusage."""
    step = _torch_worker() if route == "pytorch" else _topos_worker(route)
    info = {"ready": route, "pid": os.getpid()}
    if route == "pytorch":
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
            "minor_faults": after.ru_minflt - before.ru_minflt,
        }
        print(json.dumps({"times": times, "losses": losses, "usage": usage}), flush=True)
    return 0


class Worker:
    """A route's worker process."""

    def __init__(self, route: str, environment: dict[str, str] | None = None) -> None:
        self.route = route
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--worker", route.split("@")[0]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            env={**os.environ, **(environment or {})},
        )
        self.info = self._read()
        self.times: list[float] = []
        self.losses: list[int] = []
        self.usage = {"cpu_ms": 0.0, "minor_faults": 0}

    def _read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.route} exited with {self.process.wait()}")
        return json.loads(line)

    def train(self, steps: int) -> None:
        self.process.stdin.write(json.dumps({"steps": steps}) + "\n")
        self.process.stdin.flush()
        answer = self._read()
        self.times += answer["times"]
        self.losses += answer["losses"]
        for key, value in answer["usage"].items():
            self.usage[key] += value

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def torch_available() -> bool:
    """Whether a worker could import torch (checked in a subprocess)."""
    probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, check=False)
    return probe.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per round")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--no-torch", action="store_true", help="skip the PyTorch twin")
    parser.add_argument(
        "--torch-threads",
        type=int,
        nargs="*",
        default=[],
        help="also time the twin at these thread counts (beside its default), e.g. 1",
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
        routes.append("pytorch")
    else:
        skipped = "torch cannot be imported here"
    workers = [Worker(route) for route in routes]
    if "pytorch" in routes:
        for threads in arguments.torch_threads:
            workers.append(Worker(f"pytorch@{threads}", {"GPT_TORCH_THREADS": str(threads)}))
    try:
        for process in workers:
            process.train(arguments.warmup)
            process.times.clear()
            process.usage = dict.fromkeys(process.usage, 0)
        for round_number in range(arguments.rounds):
            for process in workers if round_number % 2 == 0 else reversed(workers):
                process.train(arguments.steps)
    finally:
        for process in workers:
            process.close()

    results = {}
    for process in workers:
        times = process.times
        quartiles = statistics.quantiles(times, n=4)
        results[process.route] = {
            "median_ms": statistics.median(times),
            "q1_ms": quartiles[0],
            "q3_ms": quartiles[2],
            "min_ms": min(times),
            "steps_timed": len(times),
            "cpu_ms_per_step": process.usage["cpu_ms"] / len(times),
            "minor_faults_per_step": process.usage["minor_faults"] / len(times),
            "info": process.info,
        }
    by_route = {process.route: process for process in workers}
    parity = by_route["engine"].losses == by_route["recorded"].losses
    reference = results.get("pytorch", {}).get("median_ms")
    for figures in results.values():
        figures["vs_pytorch"] = figures["median_ms"] / reference if reference else None
    import numpy as np

    report = {
        "benchmark": "gpt_step_time",
        "workload": "gpt (synthetic text), 32 windows of 64, 2 shards, AdamW",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "rounds": arguments.rounds,
        "steps_per_round": arguments.steps,
        "warmup": arguments.warmup,
        "routes": results,
        "pytorch_skipped": skipped,
        "loss_bits_identical": parity,
        "steps_compared": len(by_route["engine"].losses),
        "environment": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg(),
            "machine": platform.machine(),
        },
    }
    print(
        f"{'route':<12} {'ms/step':>9} {'q1':>8} {'q3':>8} {'min':>8} {'x pytorch':>10} "
        f"{'cpu ms':>8} {'faults':>8}"
    )
    for route, figures in results.items():
        ratio = f"{figures['vs_pytorch']:.2f}x" if figures["vs_pytorch"] else "-"
        print(
            f"{route:<12} {figures['median_ms']:9.2f} {figures['q1_ms']:8.2f} "
            f"{figures['q3_ms']:8.2f} {figures['min_ms']:8.2f} {ratio:>10} "
            f"{figures['cpu_ms_per_step']:8.1f} {figures['minor_faults_per_step']:8.0f}"
        )
    if skipped:
        print(f"pytorch: skipped the comparison ({skipped})")
    print(
        f"loss bits {'identical' if parity else 'DIFFER'} over {report['steps_compared']} "
        f"steps; load average {report['environment']['load_average'][0]:.2f}"
    )
    out = arguments.out or ROOT / "results" / "gpt_step_time.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return 0 if parity else 1


if __name__ == "__main__":
    sys.exit(main())

"""The speed/memory frontier of the cifar10 model: topos's routes, and PyTorch's
activation checkpointing on the same model as the peer.

    python -m benchmarks.frontier [--steps 300] [--budgets 100%,75%,60%,floor] [--no-torch]

The topos side is `topos frontier` itself (engine, recorded, and remat at each budget,
each graded in a worker of its own: ms/step, training Δ, peak RSS, parity across every
point), run as a subprocess; its JSON and SVG go to results/. The PyTorch side trains
the same model (the same initial weights, batch 64, plain SGD at 0.05) in a worker
process per variant: plain autograd, `torch.utils.checkpoint.checkpoint` around each of
the three conv/relu/pool stages (their activations recomputed in the backward pass),
and `checkpoint_sequential` over the whole model in two segments. A worker measures its
training Δ as the grader does: after warm-up steps it resets the kernel's high-water
mark (`5` into /proc/self/clear_refs) and reads VmRSS; after the measured steps, VmHWM.

PyTorch is never a dependency of the project; without `import torch` its side is
skipped, and said so.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from benchmarks import benchmark_report
from benchmarks.interleaved_rounds import torch_available

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = ROOT / "results"
BATCH = 64
POOL = 8
LEARNING_RATE = 0.05
WARM_UP = 3
TORCH_VARIANTS = ("plain", "checkpoint stages", "checkpoint_sequential 2")


def _status_bytes(field: str) -> int:
    """A `VmRSS`/`VmHWM` figure of /proc/self/status, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def torch_worker(variant: str, steps: int) -> dict:
    """Trains the model by PyTorch in `variant`; returns ms/step and memory figures."""
    import numpy as np
    import torch
    from torch.utils.checkpoint import checkpoint, checkpoint_sequential

    from benchmarks.cifar10_model import batches, copy_weights_into

    stages = [
        torch.nn.Sequential(
            torch.nn.Conv2d(channels, filters, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
        )
        for channels, filters in ((3, 16), (16, 32), (32, 64))
    ]
    head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(1024, 10))
    model = torch.nn.Sequential(*stages, head)
    copy_weights_into([stages[0][0], stages[1][0], stages[2][0], head[1]], torch)

    def forward(images):
        if variant == "plain":
            return model(images)
        if variant == "checkpoint stages":
            hidden = images
            for stage in stages:
                hidden = checkpoint(stage, hidden, use_reentrant=False)
            return head(hidden)
        return checkpoint_sequential(model, 2, images, use_reentrant=False)

    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    pool = [
        (torch.from_numpy(images.copy()), torch.from_numpy(labels.astype(np.int64)))
        for images, labels in batches(POOL, BATCH)
    ]

    def step(index: int) -> float:
        images, labels = pool[index % POOL]
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(forward(images), labels)
        loss.backward()
        optimizer.step()
        return float(loss.item())

    for index in range(WARM_UP):
        step(index)
    Path("/proc/self/clear_refs").write_text("5")
    ready = _status_bytes("VmRSS")
    times = []
    for index in range(steps):
        started = time.perf_counter()
        step(index)
        times.append((time.perf_counter() - started) * 1000)
    peak = _status_bytes("VmHWM")
    return {
        "variant": variant,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "ms_per_step": statistics.median(times),
        "ready_rss_bytes": ready,
        "peak_rss_bytes": peak,
        "training_delta_bytes": peak - ready,
    }


def run_torch(variant: str, steps: int) -> dict:
    """One PyTorch variant in a fresh worker process, with the grader's malloc setting."""
    environment = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "benchmarks.frontier", "--torch-worker", variant]
    completed = subprocess.run(
        [*command, "--steps", str(steps)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environment,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"torch worker {variant!r} failed: {completed.stderr[-2000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def run_topos(budgets: str, steps: int, json_path: Path) -> dict:
    """`topos frontier` on cifar10; returns its result."""
    # The `topos` command installed beside this interpreter (a venv's), else on PATH.
    beside = Path(sys.executable).with_name("topos")
    command = [str(beside) if beside.exists() else "topos", "frontier"]
    command += ["--workload", "cifar10", "--budgets", budgets, "--steps", str(steps)]
    command += ["--json", str(json_path)]
    completed = subprocess.run(command, cwd=ROOT, text=True, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"topos frontier exited with {completed.returncode}")
    return json.loads(json_path.read_text())


def topos_rows(result: dict) -> list[dict]:
    """One row per graded point of a frontier result."""
    rows = []
    for route in result["verdict"]["routes"]:
        speed, memory = route.get("speed") or {}, route.get("memory") or {}
        facts = (result["routes"].get(route["route"]) or {}).get("remat") or {}
        rows.append(
            {
                "point": route["route"],
                "ms_per_step": (speed.get("milliseconds_per_step") or {}).get("median"),
                "training_delta_bytes": memory.get("training_delta_bytes"),
                "peak_rss_bytes": memory.get("peak_rss_bytes"),
                "budget_bytes": facts.get("budget_bytes"),
                "recomputations": facts.get("recomputations"),
                "extra_flops_fraction": facts.get("extra_flops_fraction"),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300, help="measured steps per point")
    parser.add_argument("--budgets", default="100%,75%,60%,floor", help="remat budgets")
    parser.add_argument("--no-torch", action="store_true", help="skip the PyTorch peer")
    parser.add_argument("--torch-worker", help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.torch_worker:
        print(json.dumps(torch_worker(arguments.torch_worker, arguments.steps)))
        return 0

    started = benchmark_report.now()
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    RESULTS.mkdir(exist_ok=True)
    frontier_path = RESULTS / f"frontier-benchmark-{stamp}.json"
    result = run_topos(arguments.budgets, arguments.steps, frontier_path)
    rows = topos_rows(result)
    peers = []
    if arguments.no_torch:
        print("PyTorch: skipped (--no-torch)")
    elif not torch_available():
        print("PyTorch: skipped (torch does not import; it is never a project dependency)")
    else:
        peers = [run_torch(variant, arguments.steps) for variant in TORCH_VARIANTS]
    mebibyte = 2**20
    reference = next((row for row in rows if row["point"] == "recorded"), None)
    print()
    print(f"{'point':<34} {'ms/step':>8} {'training Δ MiB':>15} {'peak RSS MiB':>13}  notes")
    for row in rows:
        notes = ""
        if row["recomputations"] is not None:
            notes = (
                f"budget {row['budget_bytes'] / mebibyte:.1f} MiB, {row['recomputations']} "
                f"recomputed (+{100 * row['extra_flops_fraction']:.1f}% FLOPs)"
            )
        if reference and row["point"].startswith("remat") and reference["ms_per_step"]:
            notes += (
                f"; {row['ms_per_step'] / reference['ms_per_step']:.2f}x recorded's time, "
                f"Δ {row['training_delta_bytes'] / reference['training_delta_bytes']:.2f}x"
            )
        print(
            f"{'topos ' + row['point']:<34} {row['ms_per_step']:>8.2f} "
            f"{row['training_delta_bytes'] / mebibyte:>15.1f} "
            f"{row['peak_rss_bytes'] / mebibyte:>13.1f}  {notes}"
        )
    for peer in peers:
        print(
            f"{'PyTorch ' + peer['variant']:<34} {peer['ms_per_step']:>8.2f} "
            f"{peer['training_delta_bytes'] / mebibyte:>15.1f} "
            f"{peer['peak_rss_bytes'] / mebibyte:>13.1f}  torch {peer['torch']}, "
            f"{peer['threads']} threads"
        )
    summary = {
        "steps": arguments.steps,
        "frontier": str(frontier_path),
        "picture": result.get("frontier", {}).get("picture"),
        "parity": result["verdict"]["parity"]["status"],
        "topos": rows,
        "pytorch": peers,
    }
    out = RESULTS / f"frontier-benchmark-summary-{stamp}.json"
    print(f"\nparity across every topos point: {summary['parity']}")
    benchmark_report.write_report("frontier", summary, out, started)
    print(f"results: {out} (frontier {frontier_path}, picture {summary['picture']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

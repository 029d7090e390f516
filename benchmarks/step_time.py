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
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TOPOS_ROUTES = ("engine", "recorded")
LEARNING_RATE = 0.05
BATCH = 64
POOL = 8  # distinct batches, cycled

sys.path.insert(0, str(HERE))
from interleaved_rounds import (  # noqa: E402
    Worker,
    add_ratios,
    environment,
    print_table,
    pytorch_skipped,
    run_rounds,
    serve,
    summarize,
    torch_info,
    write_report,
)

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
    from cifar10_model import batches, copy_weights_into

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
    # The same initial weights as the topos model.
    copy_weights_into([model[0], model[3], model[6], model[10]], torch)
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
    """Serves one route (interleaved_rounds.serve): each input line `{"steps": n}` trains
    n steps and answers with their times (ms), loss bits and rusage."""
    if route.startswith("pytorch"):
        step = _torch_worker(channels_last=route == "pytorch-channels-last")
    else:
        step = _topos_worker(route)
    info = {"ready": route, "pid": os.getpid()}
    if route.startswith("pytorch"):
        info = torch_info(info)
    return serve(step, info)


# Parent ----------------------------------------------------------------------------------

BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def start_worker(
    route: str,
    variables: dict[str, str] | None = None,
    checkout: Path | None = None,
    label: str | None = None,
) -> Worker:
    """A route's worker process: this script's, or that of another `checkout` of topos."""
    script = Path(__file__) if checkout is None else checkout / "benchmarks" / "step_time.py"
    return Worker(script, route, label, variables)


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
    skipped = pytorch_skipped(arguments.no_torch)
    if skipped is None:
        routes += ["pytorch", "pytorch-channels-last"]
    allocator = {}
    if arguments.keep_freed_memory:
        allocator = {"MALLOC_MMAP_THRESHOLD_": str(2**30), "MALLOC_TRIM_THRESHOLD_": str(2**31)}
    workers = [
        start_worker(route, allocator if route in TOPOS_ROUTES else None) for route in routes
    ]
    if arguments.baseline:
        workers += [
            start_worker(route, allocator, arguments.baseline.resolve(), f"{route}@base")
            for route in TOPOS_ROUTES
        ]
    run_rounds(workers, arguments.warmup, arguments.rounds, arguments.steps)
    results = summarize(workers, ("cpu_ms", "system_ms", "minor_faults"))
    by_route = {worker_process.route: worker_process for worker_process in workers}
    parity = by_route["engine"].losses == by_route["recorded"].losses
    if arguments.baseline:
        parity = parity and by_route["engine@base"].losses == by_route["recorded@base"].losses
    add_ratios(
        results,
        {"vs_pytorch": "pytorch", "vs_pytorch_channels_last": "pytorch-channels-last"},
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
        "environment": environment(BLAS_VARIABLES),
    }
    print_table(results, 22, {"vs_pytorch": "x pytorch", "vs_pytorch_channels_last": "x ch-last"})
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
    write_report(report, out)
    return 0 if parity else 1


if __name__ == "__main__":
    sys.exit(main())

"""Time per training step of the cifar10 seed model: engine, recorded, the emitted peers
and PyTorch.

    python -m benchmarks.step_time [--rounds 5] [--steps 20] [--warmup 5] [--out results/...]
                                   [--processes] [--workload cifar10-winograd] [--no-peers]

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

The emitted peers (`emitted-torch`, `emitted-jax`) are the very recording the topos
routes train, emitted to PyTorch and JAX as `topos grade --routes torch,jax` runs them
(topos/peers: its two shards one after another in one program, on the workload's
`blas_threads`, one, where the peer takes a count: PyTorch does, JAX does not), trained
by the peer's autodiff and SGD on the same batches; where the hand-written twin is what
a PyTorch user would write, these are what topos's emission gives. Their losses agree
with recorded's to rounding at the first step, never bit for bit, and training may grow
the difference (these batches of unscaled normal pixels at rate 0.05 throw the loss from
11 to 42 and back at steps 0-2, and a float32 difference of 1e-7 at step 0 grew to 5e-3 by
step 4): the JSON gives both. `--no-peers` skips them; each is skipped, and said so,
when its framework does not import.

The two routes run their shards on threads, as `cifar10-threads` does. With
`--processes` they also run as `cifar10` does on Linux, its default, their second shard
in a forked child (`engine-processes`, `recorded-processes`), which must give the same
loss bits as the threads; their CPU time counts the child's too (read from the live
child, whose rusage would reach its parent only once reaped), their page faults are the
parent's alone.

`--workload NAME` (repeatable) times a variant of the same model and initial weights beside it (for
example `cifar10-winograd`), as `engine@NAME` and `recorded@NAME` (and with
`--processes`, `engine-processes@NAME` and `recorded-processes@NAME`), interleaved with
the rest; each pair of its routes must give the same loss bits (its bits need not be
cifar10's).

PyTorch is never a dependency of the project: it is only imported here, in its
own worker, when installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks import benchmark_report
from benchmarks import interleaved_rounds as harness

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TOPOS_ROUTES = ("engine", "recorded")
#: The same routes with their second shard in a forked process (`--processes`).
PROCESS_ROUTES = ("engine-processes", "recorded-processes")
#: The PyTorch twins, and the ratios of every route's median to theirs.
TWINS = ("pytorch", "pytorch-channels-last")
RATIOS = {"vs_pytorch": "pytorch", "vs_pytorch_channels_last": "pytorch-channels-last"}
LEARNING_RATE = 0.05
BATCH = 64
POOL = 8  # distinct batches, cycled

# Workers ---------------------------------------------------------------------------------


def _topos_worker(route: str):
    from benchmarks.cifar10_model import batches, build

    route, _, workload = route.partition("@")
    name, _, processes = route.partition("-")
    trainer = build(
        name, BATCH, shard_processes=processes == "processes", workload=workload or "cifar10"
    )
    pool = batches(POOL, BATCH)
    return harness.numbered_steps(
        lambda step: harness.loss_bits(trainer.step(*pool[step % POOL], LEARNING_RATE))
    )


def _torch_worker(channels_last: bool = False):
    import numpy as np
    import torch

    from benchmarks.cifar10_model import batches, torch_twin

    torch.manual_seed(0)
    model = torch_twin(torch)  # the topos model's initial weights
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

    def step_at(step: int) -> int:
        images, labels = pool[step % POOL]
        return harness.torch_step(
            optimizer, lambda: torch.nn.functional.cross_entropy(model(images), labels)
        )

    return harness.numbered_steps(step_at)


def _peer_worker(route: str):
    from benchmarks.cifar10_model import EmittedTrainer, batches

    trainer = EmittedTrainer(harness.PEERS[route], BATCH)
    pool = batches(POOL, BATCH)
    return harness.numbered_steps(
        lambda step: harness.loss_bits(trainer.step(*pool[step % POOL], LEARNING_RATE))
    )


def worker(route: str) -> int:
    """Serves one route (interleaved_rounds.serve): each input line `{"steps": n}` trains
    n steps and answers with their times (ms), loss bits and rusage."""
    if route in harness.PEERS:
        return harness.serve_route(route, _peer_worker(route))
    if route.startswith("pytorch"):
        return harness.serve_route(
            route, _torch_worker(channels_last=route == "pytorch-channels-last")
        )
    return harness.serve_route(route, _topos_worker(route))


# Parent ----------------------------------------------------------------------------------

BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def start_worker(
    route: str,
    variables: dict[str, str] | None = None,
    checkout: Path | None = None,
    label: str | None = None,
) -> harness.Worker:
    """A route's worker process: this checkout's, or that of another `checkout` of topos."""
    return harness.Worker("benchmarks.step_time", route, label, variables, checkout or ROOT)


def main(argv: list[str] | None = None) -> int:
    parser = harness.round_parser(__doc__.split("\n\n")[0], rounds=5, steps=20)
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
        "routes run too, as engine@base and recorded@base (with --processes, also "
        "engine-processes@base and recorded-processes@base), interleaved with these",
    )
    parser.add_argument(
        "--processes",
        action="store_true",
        help="also time both routes with their second shard in a forked process "
        "(cifar10-processes), interleaved with the rest",
    )
    parser.add_argument(
        "--workload",
        action="append",
        default=[],
        help="a variant of the cifar10 model (for example cifar10-winograd) whose routes are "
        "timed too, as ROUTE@NAME, interleaved with the rest (repeat it for several)",
    )
    arguments = parser.parse_args(argv)
    if arguments.worker:
        return worker(arguments.worker)

    started = benchmark_report.now()
    own_routes = TOPOS_ROUTES + (PROCESS_ROUTES if arguments.processes else ())
    base_routes = own_routes
    for variant in arguments.workload:
        own_routes += tuple(f"{route}@{variant}" for route in base_routes)
    routes, skipped = harness.timed_routes(own_routes, TWINS, arguments.no_torch)
    peers, peers_skipped = harness.timed_peers(arguments)
    routes += peers
    allocator = {}
    if arguments.keep_freed_memory:
        allocator = {"MALLOC_MMAP_THRESHOLD_": str(2**30), "MALLOC_TRIM_THRESHOLD_": str(2**31)}
    workers = [start_worker(route, allocator if route in own_routes else None) for route in routes]
    if arguments.baseline:
        workers += [
            start_worker(route, allocator, arguments.baseline.resolve(), f"{route}@base")
            for route in TOPOS_ROUTES + (PROCESS_ROUTES if arguments.processes else ())
        ]
    results = harness.time_rounds(
        workers, arguments, ("cpu_ms", "system_ms", "minor_faults"), RATIOS
    )
    pairs = [("engine", "recorded")]
    if arguments.baseline:
        pairs.append(("engine@base", "recorded@base"))
    if arguments.processes:
        pairs += [("engine", "engine-processes"), ("recorded", "recorded-processes")]
    for variant in arguments.workload:
        pairs.append((f"engine@{variant}", f"recorded@{variant}"))
        if arguments.processes:
            pairs += [
                (f"engine@{variant}", f"engine-processes@{variant}"),
                (f"recorded@{variant}", f"recorded-processes@{variant}"),
            ]
    parity = harness.losses_agree(workers, *pairs)
    recorded_vs_engine = results["recorded"]["median_ms"] / results["engine"]["median_ms"]
    differences = harness.peer_differences(workers, "recorded")
    figures = {
        "workload": "cifar10 seed model, batch 64, SGD 0.05, synthetic normal batches",
        "variant": arguments.workload,
        **harness.round_facts(arguments, workers, results, skipped, parity),
        "topos_allocator": "keeps freed memory (estimate)" if allocator else "default",
        "recorded_vs_engine": recorded_vs_engine,
        "peers_skipped": peers_skipped,
        "peer_relative_loss_difference": differences,
        "baseline": str(arguments.baseline) if arguments.baseline else None,
        "environment": harness.environment(BLAS_VARIABLES),
    }
    harness.print_table(
        results,
        max(22, *map(len, results)),
        {"vs_pytorch": "x pytorch", "vs_pytorch_channels_last": "x ch-last"},
    )
    if allocator:
        print("topos workers ran with glibc keeping freed memory (an arena's estimate)")
    harness.print_peer_differences(differences, peers_skipped)
    out = arguments.out or ROOT / "results" / "step_time.json"
    lead = f"recorded/engine {recorded_vs_engine:.2f}x; "
    return harness.conclude("step_time", figures, out, started, lead)


if __name__ == "__main__":
    sys.exit(main())

"""Time per training step of a language-model workload (`gpt` by default, or `llama`):
engine, recorded, the emitted peers and its PyTorch twin.

    python -m benchmarks.gpt_step_time [--workload gpt|llama] [--rounds 10] [--steps 10]
                                       [--no-peers] [--user-written] [--torch-threads 1]

Each runs in its own worker process (this file run with `--worker ROUTE`), speaking JSON
lines over its pipes; the parent interleaves the rounds (every worker times `--steps`
steps in round 1, then every worker in round 2, the order reversed every other round),
so a busy spell on the shared machine falls on all of them alike. The topos routes
train exactly what `topos grade --workload gpt` (or `llama`) trains (the workload's
Training: its batches, its two shards, AdamW); the twin (benchmarks/gpt_twin.py, or
llama_twin.py, each written from the workload's specification) starts from the
same weights, copied by name, and trains on the same batches with the same AdamW, in
PyTorch's default threads (`--torch-threads 1` adds it at one thread too, as
`pytorch@1`). `--user-written` (llama only) adds both routes of the same model written
by a user from the public API (benchmarks/user_written_llama.py), as `engine@user` and
`recorded@user`, with their ratio to the built-in's recorded route: the user's form must
be no slower and, recording the same graph, train the same loss bits. `--against PATH` adds
the recorded route of another checkout (its own copy of this script, so its own library)
as `recorded@against`, for a change's effect measured in the same rounds. Every topos route
must report the same loss bits at every step. Prints the median ms/step, CPU time and
minor page faults per step and the ratio to PyTorch, and writes the JSON to results/.

The emitted peers (`emitted-torch`, `emitted-jax`) are the workload's recording emitted
to PyTorch and JAX exactly as `topos grade --routes torch,jax` trains them (PeerTraining:
the same batches, the two shards one after another in one program, the workload's
`blas_threads` where the peer takes a count, the peer's own AdamW); their losses agree
with recorded's to rounding, never bit for bit (the JSON gives the relative difference at
the first step and the largest over the run). `--no-peers` skips them; each is skipped,
and said so, when its framework does not import.

PyTorch is never a dependency of the project: it is only imported here, in its own
worker, when installed.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

from benchmarks import benchmark_report
from benchmarks import interleaved_rounds as harness

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TOPOS_ROUTES = ("engine", "recorded")
#: The workloads this benchmark times, each with its PyTorch twin's module.
TWINS = {"gpt": "gpt_twin", "llama": "llama_twin"}
#: How the parent tells its workers which workload they train.
WORKLOAD_VARIABLE = "STEP_TIME_WORKLOAD"
#: Set (to 1) for a worker that trains the user-written llama instead of the built-in.
USER_WRITTEN_VARIABLE = "STEP_TIME_USER_WRITTEN"
#: The label suffix of the user-written model's workers.
USER_WRITTEN = "user"


def _workload_name() -> str:
    """The workload a worker trains: the parent's `--workload`, passed by the environment."""
    return os.environ.get(WORKLOAD_VARIABLE, "gpt")


def _training(route: str):
    from topos.training import Training
    from topos.workloads import resolve

    if os.environ.get(USER_WRITTEN_VARIABLE):
        from benchmarks.user_written_llama import workload
    else:
        workload = resolve(_workload_name())
    return Training(workload, route, workload.dataset(None), 10_000)


def _topos_worker(route: str):

    training = _training(route)
    return harness.numbered_steps(lambda step: harness.loss_bits(training.step(step)))


def _torch_worker():
    import numpy as np
    import torch

    threads = os.environ.get("TWIN_TORCH_THREADS")
    if threads:
        torch.set_num_threads(int(threads))

    module = importlib.import_module(f"benchmarks.{TWINS[_workload_name()]}")
    loss, optimizer, twin = module.loss, module.optimizer, module.twin

    # The batches and initial weights of the topos workload (no topos step is run).
    training = _training("recorded")
    named = {name: tensor.numpy() for name, tensor in training.parameters.named().items()}
    model = twin(named)
    adamw = optimizer(model)
    inputs = training.recording.inputs

    def step_at(step: int) -> int:
        feeds = training.feeds(step)
        tokens = torch.from_numpy(feeds[inputs["tokens"]].numpy().astype(np.int64))
        targets = torch.from_numpy(feeds[inputs["targets"]].numpy().astype(np.int64))
        return harness.torch_step(adamw, lambda: loss(model, tokens, targets))

    return harness.numbered_steps(step_at)


def _peer_worker(route: str):
    from topos.peers import PeerTraining
    from topos.workloads import resolve

    workload = resolve(_workload_name())
    training = PeerTraining(workload, harness.PEERS[route], workload.dataset(None), 10_000)
    return harness.numbered_steps(lambda step: harness.loss_bits(training.step(step)))


def worker(route: str) -> int:
    """Serves one route (interleaved_rounds.serve): each input line `{"steps": n}` trains
    n steps and answers with their times (ms), loss bits and rusage."""
    if route in harness.PEERS:
        return harness.serve_route(route, _peer_worker(route))
    return harness.serve_route(
        route, _torch_worker() if route == "pytorch" else _topos_worker(route)
    )


def start_worker(label: str, variables: dict[str, str] | None = None) -> harness.Worker:
    """The worker of a route labelled `route` or `route@variant`."""
    return harness.Worker("benchmarks.gpt_step_time", label.split("@")[0], label, variables)


def main(argv: list[str] | None = None) -> int:
    parser = harness.round_parser(__doc__.split("\n\n")[0], rounds=10, steps=10)
    parser.add_argument("--workload", choices=sorted(TWINS), default="gpt", help="what to time")
    parser.add_argument(
        "--user-written",
        action="store_true",
        help="llama only: also time the model written from the public API (user_written_llama)",
    )
    parser.add_argument(
        "--against",
        type=Path,
        help="another checkout whose recorded route to time beside this one's",
    )
    parser.add_argument(
        "--torch-threads",
        type=int,
        nargs="*",
        default=[],
        help="also time the twin at these thread counts (beside its default), e.g. 1",
    )
    arguments = parser.parse_args(argv)
    if arguments.worker:
        return worker(arguments.worker)

    started = benchmark_report.now()
    if arguments.user_written and arguments.workload != "llama":
        parser.error("--user-written times a user-written llama: use it with --workload llama")
    os.environ[WORKLOAD_VARIABLE] = arguments.workload  # the workers inherit it
    routes, skipped = harness.timed_routes(TOPOS_ROUTES, ["pytorch"], arguments.no_torch)
    peers, peers_skipped = harness.timed_peers(arguments)
    workers = [start_worker(route) for route in routes + peers]
    pairs = [("engine", "recorded")]
    ratios = {"vs_pytorch": "pytorch"}
    if arguments.user_written:
        for route in TOPOS_ROUTES:
            label = f"{route}@{USER_WRITTEN}"
            workers.append(start_worker(label, {USER_WRITTEN_VARIABLE: "1"}))
            pairs.append((route, label))
        ratios["vs_builtin"] = "recorded"
    if arguments.against is not None:
        workers.append(
            harness.Worker(
                "benchmarks.gpt_step_time",
                "recorded",
                "recorded@against",
                root=arguments.against.resolve(),
            )
        )
        ratios["vs_builtin"] = "recorded"
    if "pytorch" in routes:
        for threads in arguments.torch_threads:
            workers.append(start_worker(f"pytorch@{threads}", {"TWIN_TORCH_THREADS": str(threads)}))
    results = harness.time_rounds(workers, arguments, ("cpu_ms", "minor_faults"), ratios)
    parity = harness.losses_agree(workers, *pairs)
    differences = harness.peer_differences(workers, "recorded")
    figures = {
        "workload": f"{arguments.workload} (synthetic text), 32 windows of 64, 2 shards, AdamW",
        "user_written": arguments.user_written,
        **harness.round_facts(arguments, workers, results, skipped, parity),
        "peers_skipped": peers_skipped,
        "peer_relative_loss_difference": differences,
    }
    headings = {"vs_pytorch": "x pytorch", "vs_builtin": "x recorded"}
    harness.print_table(results, 16, {key: headings[key] for key in ratios})
    harness.print_peer_differences(differences, peers_skipped)
    default = ROOT / "results" / f"{arguments.workload}_step_time.json"
    return harness.conclude("gpt_step_time", figures, arguments.out or default, started)


if __name__ == "__main__":
    sys.exit(main())

"""cifar10's step on the recorded route beside PyTorch's, split into the same classes of
work, both on one thread, each in a worker process of its own, alternated round by round:
where topos is behind PyTorch and where ahead.

    python -m benchmarks.step_anatomy [--rounds 8] [--steps 5] [--layout channels-last|nchw]

The classes: the convolutions (topos's im2col and the products of the forward, the
kernel's gradient and the images' gradient; PyTorch's `mkldnn_convolution` and
`convolution_backward`, which do the same work as direct convolutions), the pooling
(the lanes' argmax, max and place; `max_pool2d_with_indices` and its backward), and
everything else a kernel does (bias, relu and its gradient, the head's products, the
loss, reshapes; PyTorch's `threshold_backward`, `fill_`, `addmm`, ...). What is left of
the step's wall time is not a kernel: the plan's own loop and the shards' bookkeeping,
or PyTorch's autograd and dispatch.

Each side is instrumented while it runs (topos's kernels wrapped with a timer each, as
`profile_step.py` does; PyTorch under `torch.profiler`, its operators' self CPU time), so
both steps run somewhat slower than unobserved; PyTorch's profiler costs more per
operator than topos's timers do. Each round gives every class a figure per step; the
table gives their medians over the rounds, and the step's. Writes
`results/step_anatomy.json`.
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

# The harness's report, and step_time's batches and learning rate (its PyTorch twin's).
from benchmarks.benchmark_report import now, write_report
from benchmarks.step_time import BATCH, LEARNING_RATE, POOL

HERE = Path(__file__).resolve().parent

#: The classes of work, in the order they are printed.
CONVOLUTIONS, POOLING, OTHER_KERNELS, NOT_A_KERNEL = (
    "convolutions (products, im2col)",
    "pooling",
    "other kernels (bias, relu, head, loss, layout)",
    "not a kernel",
)
CLASSES = (CONVOLUTIONS, POOLING, OTHER_KERNELS, NOT_A_KERNEL)

#: topos's operations that make a convolution's product or its operands.
CONVOLUTION_OPERATIONS = frozenset(
    {"im2col", "col2im", "convolution", "convolution_kernel", "convolution_images"}
)


def topos_class(operation: str) -> str:
    """The class of work a topos plan kernel of `operation` does."""
    if operation in CONVOLUTION_OPERATIONS:
        return CONVOLUTIONS
    if operation.startswith("lane_"):
        return POOLING
    return OTHER_KERNELS


def torch_class(operator: str) -> str:
    """The class of work a PyTorch operator (a profiler key, `aten::...`) does."""
    if "convolution" in operator or "mkldnn_conv" in operator:
        return CONVOLUTIONS
    if "max_pool" in operator:
        return POOLING
    return OTHER_KERNELS


def _topos_side(steps: int):
    """The recorded route at one shard on one BLAS thread, each plan kernel timed into
    its class: a function running `steps` steps that returns (wall ms a step, ms a step
    by class)."""
    from benchmarks.cifar10_model import batches, build

    trainer = build("recorded", batch=BATCH, shards=1)
    pool = batches(POOL, BATCH)
    nodes = trainer.network.nodes
    spent: dict[str, float] = defaultdict(float)

    def timed(work: str, kernel):
        def call(*operands, **attributes):
            start = time.perf_counter()
            result = kernel(*operands, **attributes)
            spent[work] += time.perf_counter() - start
            return result

        return call

    # The first step builds the plan's step list; the timers wrap it from then on.
    trainer.step(*pool[0], LEARNING_RATE)
    plan = trainer.plan
    plan._steps = [
        (index, timed(topos_class(nodes[index].operation), kernel), *rest)
        for index, kernel, *rest in plan._steps
    ]
    counter = itertools.count(1)

    def run() -> tuple[float, dict[str, float]]:
        spent.clear()
        start = time.perf_counter()
        for _ in range(steps):
            trainer.step(*pool[next(counter) % len(pool)], LEARNING_RATE)
        wall = (time.perf_counter() - start) * 1000 / steps
        return wall, {work: seconds * 1000 / steps for work, seconds in spent.items()}

    return run


def _torch_side(steps: int, channels_last: bool):
    """cifar10's PyTorch twin (as `step_time.py` times it) on one thread under
    `torch.profiler`: a function running `steps` steps that returns (wall ms a step, ms
    a step by class, from the operators' self CPU time)."""
    import torch

    from benchmarks.step_time import _torch_worker

    torch.set_num_threads(1)
    step = _torch_worker(channels_last=channels_last)
    step()

    def run() -> tuple[float, dict[str, float]]:
        activities = [torch.profiler.ProfilerActivity.CPU]
        with torch.profiler.profile(activities=activities) as profile:
            start = time.perf_counter()
            for _ in range(steps):
                step()
            wall = (time.perf_counter() - start) * 1000 / steps
        spent: dict[str, float] = defaultdict(float)
        for event in profile.key_averages():
            spent[torch_class(event.key)] += event.self_cpu_time_total / 1000 / steps
        return wall, dict(spent)

    return run


def _serve(side: str, steps: int, channels_last: bool, connection) -> None:
    """A worker: builds its side, then runs a round each time it is asked, answering with
    the round's figures, until it is told to stop (None)."""
    run = _topos_side(steps) if side == "topos" else _torch_side(steps, channels_last)
    while connection.recv() is not None:
        connection.send(run())


def _start(side: str, steps: int, channels_last: bool):
    """A worker process for `side` and the parent's end of its pipe."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    worker = context.Process(target=_serve, args=(side, steps, channels_last, theirs))
    worker.start()
    return worker, ours


def main(argv: list[str] | None = None) -> int:
    """Runs the two sides in alternated rounds and prints the classes side by side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8, help="alternated rounds")
    parser.add_argument("--steps", type=int, default=5, help="steps a side per round")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps a side first")
    parser.add_argument(
        "--layout",
        choices=("channels-last", "nchw"),
        default="channels-last",
        help="PyTorch's memory format",
    )
    parser.add_argument("--out", type=Path, default=HERE.parent / "results/step_anatomy.json")
    arguments = parser.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("step_anatomy: PyTorch is not installed (pip install -e '.[torch]')")
        return 1

    started = now()
    channels_last = arguments.layout == "channels-last"
    sides = {name: _start(name, arguments.steps, channels_last) for name in ("topos", "pytorch")}

    def run(name: str) -> tuple[float, dict[str, float]]:
        sides[name][1].send(True)
        return sides[name][1].recv()

    for name in sides:
        for _ in range(arguments.warmup):
            run(name)
    figures: dict[str, dict[str, list[float]]] = {name: defaultdict(list) for name in sides}
    for round_number in range(arguments.rounds):
        order = list(sides) if round_number % 2 == 0 else list(reversed(sides))
        for name in order:
            wall, spent = run(name)
            figures[name]["step"].append(wall)
            for work in CLASSES[:-1]:
                figures[name][work].append(spent.get(work, 0.0))
            figures[name][NOT_A_KERNEL].append(wall - sum(spent.values()))
    for worker, connection in sides.values():
        connection.send(None)
        worker.join()

    medians = {
        name: {work: statistics.median(values) for work, values in by_work.items()}
        for name, by_work in figures.items()
    }
    layout = "channels_last" if arguments.layout == "channels-last" else "NCHW"
    print(
        f"cifar10, {BATCH} images, one thread each: topos recorded (one shard) against "
        f"PyTorch {layout}, {arguments.rounds} alternated rounds of {arguments.steps} steps"
    )
    print(f"{'ms a step':>10} {'topos':>8} {'pytorch':>8} {'difference':>11}  class")
    for work in (*CLASSES, "step"):
        ours, theirs = medians["topos"][work], medians["pytorch"][work]
        print(f"{'':>10} {ours:8.2f} {theirs:8.2f} {ours - theirs:+11.2f}  {work}")
    print("(each side instrumented while it runs: see the module's docstring)")
    write_report(
        "step_anatomy",
        {
            "layout": layout,
            "rounds": arguments.rounds,
            "steps": arguments.steps,
            "batch": BATCH,
            "medians_ms": medians,
            "rounds_ms": {name: dict(by_work) for name, by_work in figures.items()},
        },
        arguments.out,
        started,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

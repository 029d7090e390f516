"""The convolutions' products under each rule of `topos.ops.blas_kernel`, side by side.

    python -m benchmarks.product_rules [--rounds 21] [--steps 100] [--images 32]

The rule is fixed by the machine's BLAS kernels (one product each with OpenBLAS's AVX2
kernels, `matmul`'s and `matmul_tn`'s row blocks elsewhere); this forces each in turn, in
one process on one BLAS thread, so the two can be compared on any machine:

- each of cifar10's forward products and kernel gradients alone, at `--images` images (32
  is one shard of the `cifar10` workload), the rules called alternately round by round
  (the order swapped each round), thread CPU time, medians;
- the whole training step of both routes, one trainer per rule, their steps alternated,
  thread CPU time a step, medians and quartiles.

Alternating the two in one process is what makes the ratio worth reading on a machine
others share: a busy spell falls on both. Prints the BLAS kernel OpenBLAS reports.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits

import topos.ops.primitives.convolution_product as convolution_product
from benchmarks.cifar10_model import batches, build
from topos.ops import REGISTRY
from topos.ops.blas_kernel import blas_kernel

#: The rules by name: whether the convolutions take the AVX2 kernels' one-product rule.
RULES = {"one product": True, "row blocks": False}
#: cifar10's convolutions: (pixels an image, depth K, filters F).
LAYERS = {"conv1": (32 * 32, 27, 16), "conv2": (16 * 16, 144, 32), "conv3": (8 * 8, 288, 64)}


def under(rule: str) -> None:
    """Makes the convolutions' kernels (and memory rules) take `rule`."""
    packs = RULES[rule]
    convolution_product.packs_every_product = lambda: packs


def alternated(calls: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Thread CPU ms of each call, round by round, the order reversed every other round."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for round_ in range(rounds):
        order = list(calls) if round_ % 2 else list(calls)[::-1]
        for name in order:
            under(name)
            start = time.thread_time()
            calls[name]()
            times[name].append((time.thread_time() - start) * 1e3)
    return times


def layer_calls(rows: int, depth: int, filters: int) -> dict[str, Callable[[], object]]:
    """One layer's forward product and kernel gradient on drawn operands, into `out`."""
    generator = np.random.default_rng(rows + depth)
    patches = generator.standard_normal((rows, depth)).astype(np.float32)
    kernel = generator.standard_normal((depth, filters)).astype(np.float32)
    gradient = generator.standard_normal((rows, filters)).astype(np.float32)
    product = np.empty((rows, filters), np.float32)
    kernel_gradient = np.empty((depth, filters), np.float32)
    forward, backward = REGISTRY["convolution"].kernel, REGISTRY["convolution_kernel"].kernel
    return {
        "forward": lambda: forward(patches, kernel, None, out=product, window=None),
        "kernel gradient": lambda: backward(patches, gradient, out=kernel_gradient),
    }


def kernels(images: int, rounds: int) -> None:
    for layer, (pixels, depth, filters) in LAYERS.items():
        rows = images * pixels
        for name, call in layer_calls(rows, depth, filters).items():
            times = alternated(dict.fromkeys(RULES, call), rounds)
            medians = {rule: statistics.median(values) for rule, values in times.items()}
            ratio = medians["one product"] / medians["row blocks"]
            print(
                f"{layer} {name} [{rows}, {depth}] x [{filters}]: "
                + ", ".join(f"{rule} {value:.3f} ms" for rule, value in medians.items())
                + f"; one product / row blocks {ratio:.3f}"
            )


def steps(route: str, images: int, count: int) -> None:
    trainers = {}
    for rule in RULES:
        under(rule)
        trainers[rule] = build(route, images, shards=1)
    pool = batches(8, images)
    warmup = 5
    for step in range(warmup):
        for rule, trainer in trainers.items():
            under(rule)
            trainer.step(*pool[step % 8])
    index = {"step": warmup}

    def step_of(rule: str) -> Callable[[], object]:
        return lambda: trainers[rule].step(*pool[index["step"] % 8])

    times: dict[str, list[float]] = {rule: [] for rule in RULES}
    for _ in range(count):
        for rule, values in alternated({rule: step_of(rule) for rule in RULES}, 1).items():
            times[rule].extend(values)
        index["step"] += 1
    medians = {rule: statistics.median(values) for rule, values in times.items()}
    for rule, values in times.items():
        first, _, third = statistics.quantiles(values, n=4)
        print(
            f"{route} step, {rule}: {medians[rule]:.2f} ms CPU (q1 {first:.2f}, q3 {third:.2f}, "
            f"min {min(values):.2f})"
        )
    ratio = medians["one product"] / medians["row blocks"]
    print(f"{route} step: one product / row blocks {ratio:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=21, help="rounds of each kernel")
    parser.add_argument("--steps", type=int, default=100, help="steps of each route and rule")
    parser.add_argument("--images", type=int, default=32, help="images a step (32: a shard)")
    arguments = parser.parse_args(argv)
    print(f"BLAS kernel: {blas_kernel() or 'not OpenBLAS'}")
    with threadpool_limits(1, "blas"):
        kernels(arguments.images, arguments.rounds)
        for route in ("recorded", "engine"):
            steps(route, arguments.images, arguments.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How far a cifar10 training step is from the machine's limit: GFLOP/s of the step
against the measured matrix-product peak.

    python -m benchmarks.step_limit [--steps 20] [--rounds 3]

The step's work is counted from the model's shapes: the convolutions' products
(forward, the kernels' gradients, and the images' gradients past the first stage)
and the head's, two flops a multiply-add; everything else (im2col, pooling, relu,
the loss) is memory traffic, not arithmetic, and is left out. The peak is a large
float32 product (`--size`, square) timed with NumPy's BLAS, on every core and on one
BLAS thread. The limit is the step's flops at that peak: no implementation that does
these products can run faster on this machine. Both topos routes are timed in this
process, interleaved, on the same batches; each line gives its median ms/step, its
GFLOP/s and how many times the limit it takes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from benchmarks.cifar10_model import batches, build

BATCH = 64
STAGES = ((3, 16), (16, 32), (32, 64))  # (channels in, filters) of the cifar10 stages
SIDE = 32
TAPS = 9
HEAD = (1024, 10)


def step_flops(batch: int = BATCH) -> int:
    """The multiply-adds of one training step's products, times two."""
    flops = 0
    side = SIDE
    for position, (channels, filters) in enumerate(STAGES):
        product = 2 * batch * side * side * channels * TAPS * filters
        # forward and the kernel's gradient; the images' gradient past the first stage
        flops += product * (2 if position == 0 else 3)
        side //= 2
    flops += 2 * batch * HEAD[0] * HEAD[1] * 3
    return flops


def product_peak(size: int, repeats: int = 7) -> float:
    """GFLOP/s of the best of `repeats` float32 `size x size` products."""
    generator = np.random.default_rng(0)
    left = generator.standard_normal((size, size), dtype=np.float32)
    right = generator.standard_normal((size, size), dtype=np.float32)
    out = np.empty_like(left)
    np.matmul(left, right, out=out)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.matmul(left, right, out=out)
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--size", type=int, default=2048, help="the peak product's side")
    arguments = parser.parse_args(argv)

    blas = [
        f"{entry['internal_api']} {entry.get('version')} {entry.get('architecture')} kernels, "
        f"{entry['num_threads']} threads"
        for entry in threadpool_info()
        if entry["user_api"] == "blas"
    ]
    peak = product_peak(arguments.size)
    with threadpool_limits(limits=1, user_api="blas"):
        single = product_peak(arguments.size)
    # On a loaded machine the two-thread product can fall below the one-thread one;
    # the limit takes the better, so it is never flattering.
    peak = max(peak, single)
    flops = step_flops()
    limit_ms = flops / (peak * 1e9) * 1000
    print(f"BLAS: {'; '.join(blas) or 'unknown'}; {os.cpu_count()} CPUs")
    print(
        f"matrix-product peak: {peak:.1f} GFLOP/s on every core, {single:.1f} on one thread "
        f"(float32 {arguments.size}x{arguments.size})"
    )
    print(f"step: {flops / 1e9:.3f} GFLOP; limit at peak {limit_ms:.2f} ms/step")

    trainers = {route: build(route, BATCH) for route in ("engine", "recorded")}
    pool = batches(8, BATCH)
    for trainer in trainers.values():
        for step in range(3):
            trainer.step(*pool[step % len(pool)])
    times: dict[str, list[float]] = {route: [] for route in trainers}
    for round_number in range(arguments.rounds):
        for route, trainer in trainers.items():
            for step in range(arguments.steps):
                images, labels = pool[(round_number * arguments.steps + step) % len(pool)]
                start = time.perf_counter()
                trainer.step(images, labels)
                times[route].append((time.perf_counter() - start) * 1000)
    print(f"{'route':<10} {'ms/step':>9} {'GFLOP/s':>9} {'% peak':>7} {'x limit':>8}")
    for route, measured in times.items():
        median = statistics.median(measured)
        rate = flops / (median / 1000) / 1e9
        print(f"{route:<10} {median:9.2f} {rate:9.1f} {rate / peak:7.0%} {median / limit_ms:8.2f}")
    print(f"load average {os.getloadavg()[0]:.2f} (a loaded machine lowers every figure)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

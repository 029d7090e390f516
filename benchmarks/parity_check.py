"""Trains the cifar10 seed model on both routes in one process and compares bits.

    python -m benchmarks.parity_check [steps] [shards]

The batch is split into the `cifar10` workload's shards unless `shards` is given.

Prints each route's loss bits per step and whether every loss and every final
parameter agrees bit for bit; exits 1 when they do not.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks.cifar10_model import ROUTES, batches, build


def train(
    route: str, steps: int, shards: int | None = None
) -> tuple[list[int], dict[int, bytes], float]:
    """Loss bits per step, final parameter bytes, and ms/step of one route."""
    trainer = build(route, shards=shards)
    losses = []
    start = time.perf_counter()
    for images, labels in batches(steps):
        losses.append(int(np.float32(trainer.step(images, labels)).view(np.uint32)))
    elapsed = (time.perf_counter() - start) / steps * 1000
    final = {
        symbol.index: np.ascontiguousarray(tensor.numpy()).tobytes()
        for symbol, tensor in trainer.parameters.items()
    }
    return losses, final, elapsed


def main(argv: list[str] | None = None) -> int:
    """Trains both routes, prints their loss bits, and exits 1 unless they agree."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("steps", nargs="?", type=int, default=5, help="training steps")
    parser.add_argument(
        "shards", nargs="?", type=int, default=None, help="shards (default: the workload's)"
    )
    arguments = parser.parse_args(argv)
    steps, shards = arguments.steps, arguments.shards
    results = {route: train(route, steps, shards) for route in ROUTES}
    for route, (losses, _, elapsed) in results.items():
        print(f"{route:>9}: {elapsed:7.1f} ms/step  " + " ".join(f"{bits:08x}" for bits in losses))
    same_losses = results["engine"][0] == results["recorded"][0]
    same_parameters = results["engine"][1] == results["recorded"][1]
    print(f"parity: losses {same_losses}, final parameters {same_parameters}")
    return 0 if same_losses and same_parameters else 1


if __name__ == "__main__":
    sys.exit(main())

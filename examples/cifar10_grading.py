"""Grades the training routes of the `cifar10` convnet against each other: the seed
program (`cifar10_grading.rs`) in Python, statement for statement.

The model, seeds and batch schedule are identical for both routes, so they train
bit-identically; what changes is where the gradients come from and what the plan
retains:

- `engine`: `backward()` + `backward` (retain-all).
- `recorded`: `differentiate` + one forward-only plan over `[loss, gradients...]`
  + `recorded_gradients`: no backward pass executes at all.

One route runs per process so an external monitor attributes the peak RSS
cleanly; pick it with `TOPOS_ROUTE` and the step count with `TOPOS_STEPS`
(`TOPOS_DATA` names a CIFAR-10 directory; without it the synthetic stand-in is
used). The end prints the first and final losses as exact bit patterns, so route
parity is checked by diffing two lines.

Like the seed, this program runs each batch through one plan. The built-in
`cifar10` workload that `topos train` and `topos grade` train splits each batch into
two shards (`Workload.shards`) and averages them, which is the same step to float32
rounding but not to the bit: compare this program's lines with `topos train` only on
an unsharded workload such as `mnist` (`mnist_grading.py`).

Run with: `TOPOS_ROUTE=recorded python examples/cifar10_grading.py`
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from topos import Tape, Tensor, cross_entropy
from topos.datasets import load_cifar10, shuffle
from topos.models import ConvNet
from topos.training.blas_threads import DEFAULT_BLAS_THREADS, blas_limit

BATCH_LEN = 64
CLASSES = 10
IMAGE_SIDE = 32


def cifar10_model(tape: Tape) -> ConvNet:
    """The seed's model: stages of 16, 32, 64 filters (seeds 21, 22, 23), head seed 24."""
    return ConvNet(tape, 3, IMAGE_SIDE, (16, 32, 64), (21, 22, 23), 24, CLASSES)


def bits(value: np.float32) -> int:
    """The float32 bit pattern of a loss."""
    return int(np.float32(value).view(np.uint32))


def main(
    model=cifar10_model,
    load=load_cifar10,
    channels=3,
    side=IMAGE_SIDE,
    shuffle_state=3,
    rates=(0.05, 0.005),
):
    """Runs the seed program for `model` (cifar10's unless another is given)."""
    route = os.environ.get("TOPOS_ROUTE", "engine")
    steps = int(os.environ.get("TOPOS_STEPS", "300"))
    if route not in ("engine", "recorded"):
        sys.exit(f"unknown TOPOS_ROUTE {route!r}; use engine or recorded")
    recorded = route == "recorded"

    dataset = load(os.environ.get("TOPOS_DATA"))
    train = dataset.train
    print(f"route {route}: {steps} steps over {len(train)} images")

    tape = Tape()
    net = model(tape)
    images = tape.input(Tensor.filled([BATCH_LEN, channels, side, side], 0.0))
    targets = tape.input(Tensor.selection([0] * BATCH_LEN, CLASSES, 1.0))
    loss = cross_entropy(net.express(images, BATCH_LEN), targets)

    images, targets, loss = images.symbol, targets.symbol, loss.symbol
    parameter_symbols = net.parameters()
    forward_nodes = len(tape)

    # The routes differ only here: what the plan computes and where the gradients come from.
    adjoints = None
    if recorded:
        adjoints = tape.differentiate(loss, parameter_symbols)
        print(
            f"recorded the chain rule: {forward_nodes} forward nodes + "
            f"{len(tape) - forward_nodes} gradient nodes"
        )
    network = tape.into_network()
    parameters = network.parameters()
    if adjoints is not None:
        plan = network.entry(adjoints.roots()).lower()
    else:
        plan = network.entry([loss]).backward().lower()
    for line in plan.describe().splitlines():
        if line.startswith(("plan:", "live volume:")):
            print(line)

    order = np.arange(len(train))
    shuffle(order, shuffle_state)

    fast = Tensor([], [rates[0]])
    slow = Tensor([], [rates[1]])
    first_loss = last_loss = np.float32(0.0)
    # One BLAS thread, as the built-in workloads compute (topos.training.blas_threads):
    # the loss bits then match `topos train`'s and not the machine's core count.
    _, one_blas_thread = blas_limit(DEFAULT_BLAS_THREADS, 1)
    training = time.perf_counter()
    with one_blas_thread():
        for step in range(steps):
            start = (step * BATCH_LEN) % (len(train) - BATCH_LEN)
            batch = order[start : start + BATCH_LEN]
            batch_images = Tensor.adopt(train.images(batch))
            batch_targets = Tensor.adopt(train.one_hot(batch))

            run = plan.forward(parameters, [(images, batch_images), (targets, batch_targets)])
            batch_loss = run.of(loss).scalar()
            if step == 0:
                first_loss = batch_loss
            last_loss = batch_loss

            if adjoints is not None:
                gradients = run.recorded_gradients(adjoints)
            else:
                gradients = run.backward(loss).parameters(parameters)
            learning_rate = fast if step < steps * 3 // 4 else slow
            parameters = parameters.step(
                gradients,
                lambda parameter, gradient, rate=learning_rate: (
                    parameter.clone() - gradient.clone() * rate.broadcast_like(gradient)
                ),
            )
    elapsed = time.perf_counter() - training

    # Exact bit patterns: two routes agree exactly when these two lines match.
    print(
        f"loss step 0: {first_loss:.6f} ({bits(first_loss):08x}), "
        f"step {steps - 1}: {last_loss:.6f} ({bits(last_loss):08x})"
    )
    print(
        f"route {route}: {steps} steps in {elapsed:.3f}s ({elapsed * 1000.0 / steps:.1f} ms/step)"
    )


if __name__ == "__main__":
    main()

"""Train a workload's classifier for a few epochs, then measure its test accuracy
through a second, forward-only probe plan: the everyday use of topos.

`examples/cifar10.py` and `examples/mnist.py` call `main` with their workload.
Environment: `TOPOS_EPOCHS` (default 2), `TOPOS_STEPS` (caps the steps, for a
quick look), `TOPOS_DATA` (a directory of real files; synthetic without it).
"""

from __future__ import annotations

import os
import time

import numpy as np

from topos import Tape, Tensor
from topos.datasets import Split, shuffle
from topos.training import Workload
from topos.training.blas_threads import blas_limit


def accuracy(probe, parameters, logits, images, split: Split, rows: int) -> float:
    """The share of `split` the model classifies right, a batch of `rows` at a time.

    The probe plan's input has a fixed batch, so the last partial batch is padded
    with repeats of its first image and the padding's answers are ignored.
    """
    correct = 0
    for start in range(0, len(split), rows):
        indices = np.arange(start, min(start + rows, len(split)))
        padded = np.concatenate([indices, np.full(rows - indices.size, indices[0])])
        run = probe.forward(parameters, {images: Tensor.adopt(split.images(padded))})
        predictions = run.of(logits).numpy().argmax(axis=1)[: indices.size]
        correct += int((predictions == split.labels[indices]).sum())
    return correct / len(split)


def main(workload: Workload) -> None:
    """Trains `workload` by the recorded route and reports its test accuracy."""
    epochs = int(os.environ.get("TOPOS_EPOCHS", "2"))
    dataset = workload.load_dataset(os.environ.get("TOPOS_DATA"))
    train, test = dataset.train, dataset.test
    rows = workload.batch_size
    steps = epochs * (len(train) // rows)
    steps = min(steps, int(os.environ.get("TOPOS_STEPS", steps)))
    print(
        f"{workload.name}: {dataset.source} data ({dataset.format}), {len(train)} train "
        f"and {len(test)} test images, {steps} steps"
    )

    tape = Tape()
    recording = workload.record(tape, rows)
    adjoints = tape.differentiate(recording.loss, recording.parameters)
    network = tape.into_network()
    training = network.entry(adjoints.roots()).lower()
    # The probe reads only the logits: no gradients, and every intermediate is freed.
    probe = network.entry([recording.logits]).lower()
    for name, plan in (("training", training), ("probe", probe)):
        for line in plan.summary():
            print(f"{name} {line}")

    parameters = network.parameters()
    optimizer = workload.optimizer()
    order = np.arange(len(train))
    shuffle(order, workload.shuffle_state)
    # The workload's BLAS threads (one): two spinning OpenBLAS threads beside another
    # busy program run several times slower (see topos.training.blas_threads).
    _, workload_blas_threads = blas_limit(workload.blas_threads, 1)
    started = time.perf_counter()
    with workload_blas_threads():
        for step in range(steps):
            start = (step * rows) % (len(train) - rows)
            batch = order[start : start + rows]
            run = training.forward(parameters, workload.feeds(train, batch, recording))
            optimizer.learning_rate = float(workload.learning_rate(step, steps))
            parameters = optimizer.step(parameters, run.recorded_gradients(adjoints))
            if step % 200 == 0 or step == steps - 1:
                print(f"step {step}: loss {run.of(recording.loss).scalar():.4f}")
        elapsed = time.perf_counter() - started
        print(f"trained {steps} steps in {elapsed:.1f}s ({elapsed * 1000 / steps:.1f} ms/step)")
        share = accuracy(probe, parameters, recording.logits, recording.images, test, rows)
    print(f"test accuracy: {share:.2%} (chance is {1 / train.classes:.0%})")

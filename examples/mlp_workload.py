"""A 784-256-128-10 perceptron on MNIST: a workload whose parameters outweigh its
activations, the shape of model where a step's memory lies mostly outside the plan.

`workload` trains batches of 128 in one shard; `workload_128_2`, `workload_1024_1`
and `workload_1024_2` are the other batch sizes and shard counts. Grade one with:
`PYTHONPATH=examples topos grade --workload mlp_workload:workload_1024_2`
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np

from topos import Linear, Shape, Tape, Tensor, cross_entropy, init
from topos.datasets import load_mnist
from topos.training import Recording, StepSchedule, Workload

WIDTHS = (784, 256, 128, 10)


def record(tape: Tape, rows: int, dtype: Any = np.float32) -> Recording:
    """Three Linear layers, tanh after the first and relu after the second."""
    layers = [
        Linear(
            tape,
            init.kaiming(40 + depth)(Shape([inputs, outputs])).astype(dtype),
            Tensor.filled([outputs], 0.0, dtype=dtype),
        )
        for depth, (inputs, outputs) in enumerate(itertools.pairwise(WIDTHS))
    ]
    images = tape.input(Tensor.filled([rows, 1, 28, 28], 0.0, dtype=dtype))
    targets = tape.input(Tensor.selection([0] * rows, WIDTHS[-1], dtype=dtype))
    hidden = layers[0].express(images.reshape(rows, WIDTHS[0])).tanh()
    hidden = layers[1].express(hidden).relu()
    logits = layers[2].express(hidden)
    loss = cross_entropy(logits, targets)
    parameters = [symbol for layer in layers for symbol in layer.parameters()]
    return Recording(images.symbol, targets.symbol, logits.symbol, loss.symbol, parameters)


workload = Workload(
    name="mlp",
    description="a 784-256-128-10 perceptron (tanh, relu) on MNIST, plain SGD",
    record=record,
    load_dataset=load_mnist,
    learning_rate=StepSchedule(0.1, 0.01),
    batch_size=128,
    shuffle_state=5,
)
workload_128_2 = dataclasses.replace(workload, shards=2)
workload_1024_1 = dataclasses.replace(workload, batch_size=1024)
workload_1024_2 = dataclasses.replace(workload, batch_size=1024, shards=2)

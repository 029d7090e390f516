"""The `mnist` workload: two conv/relu/pool stages on MNIST (or its synthetic stand-in)."""

from __future__ import annotations

from typing import Any

import numpy as np

from topos import Tape
from topos.datasets import load_mnist
from topos.models.convnet import ConvNet, record_classifier
from topos.training.workload import Recording, StepSchedule, Workload

IMAGE_SIDE = 28
CLASSES = 10
BATCH_LEN = 64
FILTERS = (8, 16)


def model(tape: Tape, dtype: Any = np.float32) -> ConvNet:
    """Stages of 8 and 16 filters (seeds 11, 12), a 784 -> 10 head (seed 13)."""
    return ConvNet(tape, 1, IMAGE_SIDE, FILTERS, (11, 12), 13, CLASSES, dtype)


def record(tape: Tape, rows: int, dtype: Any = np.float32) -> Recording:
    """Records the model and its cross-entropy loss for a batch of `rows` images, in
    `dtype` (float32 trains; float64 is what `topos check` differentiates)."""
    return record_classifier(tape, rows, model(tape, dtype), 1, IMAGE_SIDE, dtype)


workload = Workload(
    name="mnist",
    description="two conv/relu/pool stages (8, 16 filters) and a 784 -> 10 head",
    record=record,
    load_dataset=load_mnist,
    learning_rate=StepSchedule(0.1, 0.01),
    batch_size=BATCH_LEN,
    shuffle_state=5,
)

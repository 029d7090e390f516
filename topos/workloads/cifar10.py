"""The `cifar10` workload: the seed program's convnet on CIFAR-10 (or its synthetic stand-in)."""

from __future__ import annotations

from typing import Any

import numpy as np

from topos import Tape
from topos.datasets import load_cifar10
from topos.models.convnet import ConvNet, record_classifier
from topos.training.workload import Recording, StepSchedule, Workload

IMAGE_SIDE = 32
CLASSES = 10
BATCH_LEN = 64
FILTERS = (16, 32, 64)


def model(tape: Tape, dtype: Any = np.float32) -> ConvNet:
    """The seed's model: stages of 16, 32, 64 filters (seeds 21, 22, 23), head seed 24."""
    return ConvNet(tape, 3, IMAGE_SIDE, FILTERS, (21, 22, 23), 24, CLASSES, dtype)


def record(tape: Tape, rows: int, dtype: Any = np.float32) -> Recording:
    """Records the model and its cross-entropy loss for a batch of `rows` images, in
    `dtype` (float32 trains; float64 is what `topos check` differentiates)."""
    return record_classifier(tape, rows, model(tape, dtype), 3, IMAGE_SIDE, dtype)


workload = Workload(
    name="cifar10",
    description="three conv/relu/pool stages (16, 32, 64 filters) and a 1024 -> 10 head",
    record=record,
    load_dataset=load_cifar10,
    learning_rate=StepSchedule(0.05, 0.005),
    batch_size=BATCH_LEN,
    shuffle_state=3,
    shards=2,
)

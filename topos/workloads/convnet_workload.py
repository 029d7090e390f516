"""A convnet image-classification workload from its few defining numbers: what the
built-in `cifar10` and `mnist` are, each one value."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from topos.datasets import Dataset
from topos.graph import Tape
from topos.models.convnet import ConvNet, record_classifier
from topos.training.workload import Recording, StepSchedule, Workload


def convnet_workload(
    name: str,
    description: str,
    *,
    channels: int,
    side: int,
    filters: Sequence[int],
    kernel_seeds: Sequence[int],
    head_seed: int,
    classes: int,
    load_dataset: Callable[[str | None], Dataset],
    learning_rate: StepSchedule,
    shuffle_state: int,
    batch_size: int = 64,
    shards: int = 1,
    shard_processes: bool | None = False,
) -> Workload:
    """A workload training `ConvNet(channels, side, filters, kernel_seeds, head_seed,
    classes)` by cross-entropy on `load_dataset`'s images with plain SGD."""

    def record(tape: Tape, rows: int, dtype: Any = np.float32) -> Recording:
        """Records the model and its cross-entropy loss for a batch of `rows` images, in
        `dtype` (float32 trains; float64 is what `topos check` differentiates)."""
        model = ConvNet(tape, channels, side, filters, kernel_seeds, head_seed, classes, dtype)
        return record_classifier(tape, rows, model, channels, side, dtype)

    return Workload(
        name=name,
        description=description,
        record=record,
        load_dataset=load_dataset,
        learning_rate=learning_rate,
        batch_size=batch_size,
        shuffle_state=shuffle_state,
        shards=shards,
        shard_processes=shard_processes,
    )

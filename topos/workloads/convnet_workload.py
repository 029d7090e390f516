"""A convnet image-classification workload from its few defining numbers: what the
built-in `cifar10` and `mnist` are, each one value."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from topos.datasets import Dataset
from topos.graph import Tape
from topos.models.convnet import ConvNet, record_classifier
from topos.training.workload import Recording, StepSchedule, Workload


@dataclass(frozen=True)
class ConvNetRecording:
    """A workload's `record`: the `ConvNet` of these numbers and its cross-entropy loss. A
    value, so a variant is `dataclasses.replace(recording, algorithm="winograd")`."""

    channels: int
    side: int
    filters: tuple[int, ...]
    kernel_seeds: tuple[int, ...]
    head_seed: int
    classes: int
    algorithm: str = "direct"

    def __call__(self, tape: Tape, rows: int, dtype: Any = np.float32) -> Recording:
        """Records the model and its cross-entropy loss for a batch of `rows` images, in
        `dtype` (float32 trains; float64 is what `topos check` differentiates)."""
        model = ConvNet(
            tape,
            self.channels,
            self.side,
            self.filters,
            self.kernel_seeds,
            self.head_seed,
            self.classes,
            dtype,
            self.algorithm,
        )
        return record_classifier(tape, rows, model, self.channels, self.side, dtype)


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
    algorithm: str = "direct",
    blas_threads: int | None = 1,
) -> Workload:
    """A workload training `ConvNet(channels, side, filters, kernel_seeds, head_seed,
    classes, algorithm=algorithm)` by cross-entropy on `load_dataset`'s images with plain
    SGD."""
    record = ConvNetRecording(
        channels, side, tuple(filters), tuple(kernel_seeds), head_seed, classes, algorithm
    )
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
        blas_threads=blas_threads,
    )

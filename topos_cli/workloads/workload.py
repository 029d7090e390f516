"""Workload: what `topos grade` trains — a model and loss, a dataset, a batch schedule, routes.

A workload is a small, declarative object. Users write their own and name it on
the command line as `package.module:attribute`, or register it under the
`topos.workloads` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from topos import Symbol, Tape
from topos.datasets import DataError, Dataset

ROUTES = ("engine", "recorded")


@dataclass(frozen=True)
class Recording:
    """What recording a workload's model leaves on the tape: the two inputs, the
    logits, the scalar loss, and the parameters to train in a fixed order."""

    images: Symbol
    targets: Symbol
    logits: Symbol
    loss: Symbol
    parameters: list[Symbol]


@dataclass(frozen=True)
class StepSchedule:
    """A learning rate that drops once: `first` for the first `fraction` of the steps,
    then `then` (the seed's schedule: 3/4 of the steps fast, the rest slow)."""

    first: float
    then: float
    fraction: tuple[int, int] = (3, 4)

    def __call__(self, step: int, steps: int) -> float:
        numerator, denominator = self.fraction
        return self.first if step < steps * numerator // denominator else self.then


@dataclass(frozen=True)
class Workload:
    """A trainable workload.

    `record(tape, rows)` records the model and loss for a batch of `rows` samples
    and returns a Recording; `load_dataset(directory)` returns the Dataset (None
    means the built-in synthetic stand-in).

    `shards` splits each batch into that many equal shards, trained at once on as
    many threads (BLAS at one thread each), their mean losses and gradients averaged
    in shard order: the same step to rounding, on every core. Both routes shard
    alike, so they stay bit-identical; the loss bits do depend on the shard count.
    """

    name: str
    description: str
    record: Callable[[Tape, int], Recording]
    load_dataset: Callable[[str | None], Dataset]
    learning_rate: Callable[[int, int], float]
    batch_size: int = 64
    shuffle_state: int = 0
    routes: tuple[str, ...] = field(default=ROUTES)
    shards: int = 1

    def __post_init__(self) -> None:
        unknown = [route for route in self.routes if route not in ROUTES]
        if unknown:
            raise ValueError(
                f"workload {self.name!r}: unknown route {unknown[0]!r}; "
                f"routes are {', '.join(ROUTES)}"
            )
        if self.batch_size < 1:
            raise ValueError(f"workload {self.name!r}: batch size {self.batch_size} < 1")
        if self.shards < 1 or self.batch_size % self.shards:
            raise ValueError(
                f"workload {self.name!r}: {self.shards} shards do not divide "
                f"a batch of {self.batch_size}"
            )

    def dataset(self, directory: str | None) -> Dataset:
        """The workload's dataset from the folder `directory`, or its synthetic stand-in
        when that is None. A folder the workload does not read is refused: a grade must
        never say it used data it silently ignored."""
        dataset = self.load_dataset(directory)
        if directory is not None and dataset.source == "synthetic":
            raise DataError(
                directory,
                f"workload {self.name!r} reads no data files (it trains on synthetic data "
                f"whatever --data names); leave --data out",
            )
        return dataset

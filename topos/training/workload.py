"""Workload: what `topos grade` trains — a model and loss, a dataset, a batch schedule, routes.

A workload is a small, declarative object. Users write their own and name it on
the command line as `package.module:attribute`, or register it under the
`topos.workloads` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from topos.datasets import DataError, Dataset, Split
from topos.graph import ParameterGradients, Parameters, Symbol, Tape
from topos.names import ROUTES
from topos.nn import SGD
from topos.tensor import Tensor
from topos.training.blas_threads import DEFAULT_BLAS_THREADS
from topos.training.shuffled_batches import ShuffledBatches, TooFewSamplesError


class Recording:
    """What recording a workload's model leaves on the tape: its inputs by name (fed per
    batch), its scalar loss, the parameters to train in a fixed order, and any outputs
    worth reading by name (a classifier's `logits`).

    `parameters` is a sequence of symbols, or a mapping of names to symbols (then
    `parameter_names` lists the names in the same order). `Recording(images, targets,
    logits, loss, parameters)` is the image classifier's form: inputs `images` and
    `targets`, output `logits`.
    """

    __slots__ = ("inputs", "loss", "outputs", "parameter_names", "parameters")

    def __init__(
        self,
        images: Symbol | None = None,
        targets: Symbol | None = None,
        logits: Symbol | None = None,
        loss: Symbol | None = None,
        parameters: Sequence[Symbol] | Mapping[str, Symbol] = (),
        *,
        inputs: Mapping[str, Symbol] | None = None,
        outputs: Mapping[str, Symbol] | None = None,
    ) -> None:
        if loss is None:
            raise TypeError("Recording: the loss is required")
        named_inputs = dict(inputs or {})
        if images is not None:
            named_inputs["images"] = images
        if targets is not None:
            named_inputs["targets"] = targets
        named_outputs = dict(outputs or {})
        if logits is not None:
            named_outputs["logits"] = logits
        self.inputs: dict[str, Symbol] = named_inputs
        self.outputs: dict[str, Symbol] = named_outputs
        self.loss = loss
        if isinstance(parameters, Mapping):
            self.parameter_names: list[str] | None = list(parameters)
            self.parameters: list[Symbol] = list(parameters.values())
        else:
            self.parameter_names = None
            self.parameters = list(parameters)

    def named_parameters(
        self, recorded_names: Mapping[str, int] | None = None
    ) -> dict[str, Symbol]:
        """The parameters by name: the names the recording gives; for a recording that
        gives none (a sequence of symbols), each parameter's name on the tape
        (`recorded_names`, a tape's or network's `names`: `tape.parameter(t, "w")`), else
        `%<node index>`."""
        if self.parameter_names:
            return dict(zip(self.parameter_names, self.parameters))
        by_index = {index: name for name, index in (recorded_names or {}).items()}
        names = [by_index.get(symbol.index, f"%{symbol.index}") for symbol in self.parameters]
        return dict(zip(names, self.parameters))

    def _named(self, table: Mapping[str, Symbol], name: str, kind: str) -> Symbol:
        try:
            return table[name]
        except KeyError:
            raise AttributeError(
                f"this recording has no {kind} named {name!r}; it has {', '.join(table) or 'none'}"
            ) from None

    @property
    def images(self) -> Symbol:
        """The classifier's `images` input."""
        return self._named(self.inputs, "images", "input")

    @property
    def targets(self) -> Symbol:
        """The classifier's `targets` input (one-hot rows)."""
        return self._named(self.inputs, "targets", "input")

    @property
    def logits(self) -> Symbol:
        """The classifier's `logits` output."""
        return self._named(self.outputs, "logits", "output")


Feeds = Callable[[Split, np.ndarray, Recording], Mapping[Symbol, Tensor]]


def classifier_feeds(split: Split, indices: np.ndarray, recording: Recording) -> dict:
    """An image classifier's batch: the standardised images and the one-hot targets of
    the samples at `indices`."""
    return {
        recording.images: Tensor.adopt(split.images(indices)),
        recording.targets: Tensor.adopt(split.one_hot(indices)),
    }


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


class BatchOrder(Protocol):
    """Which samples each step trains on: `indices(step)` (sample indices of an image
    split; window offsets of a text), the same for every route."""

    def indices(self, step: int) -> np.ndarray:
        """The indices of step `step`'s batch."""
        ...


class Optimizer(Protocol):
    """What a workload's optimizer offers the training loop: a learning rate it may set
    before each step, and the step itself."""

    learning_rate: float

    def step(self, parameters: Parameters, gradients: ParameterGradients) -> Parameters:
        """The parameters after one step."""
        ...


@dataclass(frozen=True)
class Workload:
    """A trainable workload.

    `record(tape, rows)` records the model and loss for a batch of `rows` samples
    and returns a Recording; `load_dataset(directory)` returns the Dataset (None
    means the built-in synthetic stand-in); `feeds(split, indices, recording)` turns
    the samples at `indices` into the recording's input payloads (an image
    classifier's, by default). `optimizer()` makes the optimizer one training uses
    (plain SGD by default; Adam fits), whose `learning_rate` is set to
    `learning_rate(step, steps)` before every step. `batches(split, batch_size,
    shuffle_state)` makes the batch order (`ShuffledBatches`, the seed's, by default;
    a language model's `RandomWindows`). `adapt(workload, dataset)`, when given, makes
    the workload fitted to a dataset (`fitted`): a language model sizes its vocabulary.

    `shards` splits each batch into that many equal shards, trained at once on as
    many threads (BLAS at one thread each), their mean losses and gradients averaged
    in shard order: the same step to rounding, on every core. Both routes shard
    alike, so they stay bit-identical; the loss bits do depend on the shard count.
    With `shard_processes=True` the shards past the first run in forked child
    processes instead of threads (Linux only, refused elsewhere; the same bits; see
    `ShardProcesses`); with None, in processes where they can run (Linux) and on
    threads elsewhere, as the built-in two-shard workloads do; False (the default for a
    workload of your own) keeps them on threads.

    `blas_threads` is how many BLAS threads each shard's products run on while a step
    computes: one by default, whatever the shard count, so a workload never collapses
    beside another program that keeps the cores busy (OpenBLAS's threads spin-wait for
    each other; see `topos.training.blas_threads`); more to let one shard's products
    use more cores on a machine of its own; None leaves the process's BLAS as it is set.
    """

    name: str
    description: str
    record: Callable[[Tape, int], Recording]
    load_dataset: Callable[[str | None], Dataset]
    learning_rate: Callable[[int, int], float]
    batch_size: int = 64
    feeds: Feeds = classifier_feeds
    optimizer: Callable[[], Optimizer] = field(default=lambda: SGD(0.0))
    shuffle_state: int = 0
    routes: tuple[str, ...] = field(default=ROUTES)
    shards: int = 1
    batches: Callable[[Any, int, int], BatchOrder] = ShuffledBatches
    adapt: Callable[[Workload, Dataset], Workload] | None = None
    shard_processes: bool | None = False
    blas_threads: int | None = DEFAULT_BLAS_THREADS

    def __post_init__(self) -> None:
        unknown = [route for route in self.routes if route not in ROUTES]
        if unknown:
            raise ValueError(
                f"workload {self.name!r}: unknown route {unknown[0]!r}; "
                f"routes are {', '.join(ROUTES)}"
            )
        if self.batch_size < 1:
            raise ValueError(f"workload {self.name!r}: batch size {self.batch_size} < 1")
        if self.blas_threads is not None and self.blas_threads < 1:
            raise ValueError(
                f"workload {self.name!r}: blas_threads {self.blas_threads} < 1 (None leaves "
                "the process's BLAS as it is)"
            )
        if self.shards < 1 or self.batch_size % self.shards:
            raise ValueError(
                f"workload {self.name!r}: {self.shards} shards do not divide "
                f"a batch of {self.batch_size}"
            )

    def fitted(self, dataset: Dataset) -> Workload:
        """This workload as it trains on `dataset` (itself, unless it has `adapt`)."""
        return self if self.adapt is None else self.adapt(self, dataset)

    def batch_order(self, dataset: Dataset) -> BatchOrder:
        """The order this workload's batches take through `dataset`'s training split; a
        split too small for a batch is a `DataError` naming the dataset and its size."""
        train = dataset.train
        try:
            return self.batches(train, self.batch_size, self.shuffle_state)
        except TooFewSamplesError as shortage:
            unit = getattr(train, "unit", "images")
            raise DataError(
                dataset.source,
                f"dataset {dataset.name!r} has {len(train)} training {unit}, too few for "
                f"workload {self.name!r}: {shortage}",
            ) from None

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

"""A family of generated workloads, for holding the memory prediction to its target.

`tests.cli.generated_workloads:mlp_3` or `...:convnet_5` names one: the number seeds
its shape (depth, widths, activations or filters), its batch, shard count and
optimizer (SGD or Adam), so a worker process builds exactly the workload the test
means. Sizes are chosen so that every part of a step's memory (the feeds, the
gradients, the moments) weighs more than the tolerance's 256 KiB floor, while a step
stays a few milliseconds.
"""

from __future__ import annotations

import dataclasses
import itertools
import random

from topos import SGD, Adam, Linear, Shape, Tape, Tensor, cross_entropy, init
from topos.datasets.synthetic import synthetic_dataset
from topos.models.convnet import ConvNet, record_classifier
from topos.training import Recording, StepSchedule, Workload

CLASSES = 10


@dataclasses.dataclass(frozen=True)
class Family:
    """One generated workload's choices, drawn from its seed."""

    kind: str
    seed: int

    @property
    def draws(self) -> random.Random:
        return random.Random(f"{self.kind}-{self.seed}")

    def choices(self) -> dict:
        draws = self.draws
        shards = draws.choice((1, 2))
        batch = draws.choice((64, 128, 256))
        adam = draws.random() < 0.5
        if self.kind == "mlp":
            side = draws.choice((16, 24, 32))
            depth = draws.randint(1, 3)
            widths = [draws.choice((64, 128, 256, 512)) for _ in range(depth)]
            activations = [draws.choice(("relu", "tanh")) for _ in range(depth)]
            return dict(
                shards=shards,
                batch=batch,
                adam=adam,
                channels=1,
                side=side,
                widths=widths,
                activations=activations,
            )
        stages = draws.randint(1, 2)
        return dict(
            shards=shards,
            batch=batch,
            adam=adam,
            channels=draws.choice((1, 3)),
            side=16,
            filters=[draws.choice((4, 8, 16)) for _ in range(stages)],
        )


def _mlp_record(choices: dict):
    def record(tape: Tape, rows: int) -> Recording:
        channels, side = choices["channels"], choices["side"]
        features = channels * side * side
        images = tape.input(Tensor.filled([rows, channels, side, side], 0.0))
        targets = tape.input(Tensor.selection([0] * rows, CLASSES))
        hidden = images.reshape(rows, features)
        parameters = []
        widths = [features, *choices["widths"], CLASSES]
        for depth, (inputs, outputs) in enumerate(itertools.pairwise(widths)):
            layer = Linear(
                tape,
                init.kaiming(60 + depth)(Shape([inputs, outputs])),
                Tensor.filled([outputs], 0.0),
            )
            parameters += layer.parameters()
            hidden = layer.express(hidden)
            if depth < len(choices["activations"]):
                hidden = getattr(hidden, choices["activations"][depth])()
        loss = cross_entropy(hidden, targets)
        return Recording(images.symbol, targets.symbol, hidden.symbol, loss.symbol, parameters)

    return record


def _convnet_record(choices: dict):
    def record(tape: Tape, rows: int) -> Recording:
        filters = choices["filters"]
        seeds = tuple(70 + stage for stage in range(len(filters)))
        model = ConvNet(tape, choices["channels"], choices["side"], filters, seeds, 79, CLASSES)
        return record_classifier(tape, rows, model, choices["channels"], choices["side"])

    return record


def generated(kind: str, seed: int) -> Workload:
    """The generated workload `kind` (`mlp` or `convnet`) number `seed`."""
    choices = Family(kind, seed).choices()
    shape = (choices["channels"], choices["side"], choices["side"])
    record = _mlp_record(choices) if kind == "mlp" else _convnet_record(choices)
    mean = (0.5,) * choices["channels"]
    deviation = (0.25,) * choices["channels"]

    def load_dataset(directory: str | None):
        return synthetic_dataset(
            f"generated-{kind}-{seed}", seed, shape, (600, 10), CLASSES, mean, deviation
        )

    return Workload(
        name=f"{kind}_{seed}",
        description=f"a generated {kind}: {choices}",
        record=record,
        load_dataset=load_dataset,
        learning_rate=StepSchedule(0.01, 0.001),
        batch_size=choices["batch"],
        optimizer=(lambda: Adam(0.001)) if choices["adam"] else (lambda: SGD(0.0)),
        shuffle_state=seed,
        shards=choices["shards"],
    )


def __getattr__(name: str) -> Workload:
    """`mlp_<seed>` and `convnet_<seed>`, built on demand; `processes_mlp_<seed>` is the
    same workload in two shards, the second in a forked process."""
    kind, _, seed = name.rpartition("_")
    processes = kind.startswith("processes_")
    kind = kind.removeprefix("processes_")
    if kind in ("mlp", "convnet") and seed.isdigit():
        workload = generated(kind, int(seed))
        if processes:
            workload = dataclasses.replace(workload, name=name, shards=2, shard_processes=True)
        return workload
    raise AttributeError(name)

"""Dataset: a named pair of splits, loaded lazily, that says where it came from."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

from topos.datasets.split import Split


class Dataset:
    """A train and a test split, each loaded on first use, and where they came from.

    `source` is "synthetic" or the directory the files were read from; `format`
    names the file layout ("synthetic", "cifar-10-batches-bin", "cifar-10-batches-py",
    "idx", "idx.gz"). A trainer that reads only `train` never pays for `test`.
    """

    def __init__(
        self,
        name: str,
        source: str,
        format: str,
        load_train: Callable[[], Split],
        load_test: Callable[[], Split],
    ) -> None:
        self.name = name
        self.source = source
        self.format = format
        self._load_train = load_train
        self._load_test = load_test

    @cached_property
    def train(self) -> Split:
        """The training split, loaded (or generated) on first access."""
        return self._load_train()

    @cached_property
    def test(self) -> Split:
        """The test split, loaded (or generated) on first access."""
        return self._load_test()

    def holding(self, samples) -> Dataset:
        """This dataset with its training split keeping only the pixels of `samples` in
        memory (`Split.holding`); the test split is still loaded on first use."""
        train = self.train.holding(samples)
        return Dataset(self.name, self.source, self.format, lambda: train, self._load_test)

    @property
    def fingerprint(self) -> str:
        """The fingerprint of the train split: what a training result depends on."""
        return self.train.fingerprint

    def describe(self) -> dict[str, Any]:
        """What the dataset holds, JSON-ready: name, source, format, and per split its
        size, image shape, class counts and fingerprint. Loads both splits."""
        return {
            "name": self.name,
            "source": self.source,
            "format": self.format,
            "fingerprint": self.fingerprint,
            "splits": {
                name: {
                    "images": len(split),
                    "image_shape": list(split.image_shape),
                    "class_counts": split.class_counts(),
                    "fingerprint": split.fingerprint,
                }
                for name, split in (("train", self.train), ("test", self.test))
            },
        }

    def __repr__(self) -> str:
        return f"Dataset({self.name!r}, source={self.source!r}, format={self.format!r})"

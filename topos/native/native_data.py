"""NativeData: a native workload's training samples and the order its batches take."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from topos.datasets.shuffle import shuffle


class NativeData:
    """Training samples as NumPy arrays of one length along their first axis (inputs,
    targets, ...), and where they came from; `batch(step, size, state)` gives every route
    the same samples at the same step.

    The batch order is topos's: one Fisher-Yates shuffle of the sample indices over the
    splitmix64 stream from `state`, read `size` at a time, wrapping round at its end."""

    def __init__(
        self,
        arrays: Sequence[np.ndarray],
        name: str = "tensors",
        source: str = "workload",
        format: str = "arrays",
    ) -> None:
        arrays = [np.ascontiguousarray(array) for array in arrays]
        if not arrays:
            raise ValueError("a native workload's data holds no arrays")
        lengths = {array.shape[0] if array.ndim else 0 for array in arrays}
        if len(lengths) != 1 or 0 in lengths:
            raise ValueError(
                f"a native workload's data arrays must share one non-zero first extent, "
                f"not {sorted(lengths)}"
            )
        self.arrays = arrays
        self.name = name
        self.source = source
        self.format = format
        self._orders: dict[int, np.ndarray] = {}

    @property
    def train(self) -> NativeData:
        """The training samples (all of them: a native workload has one split)."""
        return self

    def __len__(self) -> int:
        return int(self.arrays[0].shape[0])

    @property
    def fingerprint(self) -> str:
        """A digest of every array's dtype, shape and bytes: what a result depends on.

        The bytes are hashed where they lie (the arrays are C-contiguous): `tobytes()`
        copied them, and a worker that read its data's fingerprint once ready counted a
        copy of the whole dataset (614 MB of cifar10's images) as its step's memory."""
        digest = hashlib.sha256()
        for array in self.arrays:
            digest.update(f"{array.dtype.str}{array.shape}".encode())
            digest.update(memoryview(array).cast("B"))
        return digest.hexdigest()[:16]

    def indices(self, step: int, size: int, state: int) -> np.ndarray:
        """The sample indices of step `step`'s batch of `size`."""
        order = self._orders.get(state)
        if order is None:
            order = np.arange(len(self), dtype=np.int64)
            shuffle(order, state)
            self._orders[state] = order
        positions = (np.arange(size, dtype=np.int64) + step * size) % len(self)
        return order[positions]

    def batch(self, step: int, size: int, state: int) -> list[np.ndarray]:
        """Step `step`'s batch: each array's rows at `indices(step, size, state)`."""
        chosen = self.indices(step, size, state)
        return [array[chosen] for array in self.arrays]


#: The image datasets topos ships that a native workload may name as its `data`: the
#: batch is then `(images float32 [batch, channels, height, width], labels int64)`.
BUILT_IN_DATA = ("cifar10", "mnist")


def native_data_of(
    data: Callable[[str | None], Sequence[Any]] | str, name: str, directory: str | None
) -> NativeData:
    """A native workload's training samples: topos's dataset called `data` (read from
    `directory` where there is one), or what the workload's function `data(directory)`
    returns (arrays, or a framework's tensors), under the workload's `name`."""
    if isinstance(data, str):
        from topos.datasets import load

        dataset = load(data, directory)
        train = dataset.train
        everything = np.arange(len(train))
        images = train.images(everything)
        labels = np.asarray(train.labels, dtype=np.int64)
        return NativeData([images, labels], dataset.name, dataset.source, dataset.format)
    arrays = [_as_array(array) for array in data(directory)]
    source = "workload" if directory is None else directory
    return NativeData(arrays, name, source)


def _as_array(value: Any) -> np.ndarray:
    """A tensor's values as a NumPy array (a PyTorch tensor detached, a JAX array read
    back, arrays as they are)."""
    detach = getattr(value, "detach", None)
    if detach is not None:
        return detach().cpu().numpy()
    return np.asarray(value)

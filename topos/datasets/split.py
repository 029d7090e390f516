"""Split: one part of a dataset (train or test), its pixels kept as uint8."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import cached_property

import numpy as np


class Split:
    """Images and labels of one split, standardised per batch rather than up front.

    Pixels stay uint8 `[count, channels, height, width]` and labels uint8 `[count]`,
    both read-only, so a split costs its raw bytes. `images` standardises a batch
    per channel as `(pixel / 255 - mean) / deviation` through a 256-entry float32
    lookup table per channel, computed once in float64.
    """

    def __init__(
        self,
        pixels: np.ndarray,
        labels: np.ndarray,
        classes: int,
        mean: Sequence[float],
        deviation: Sequence[float],
    ) -> None:
        pixels = np.ascontiguousarray(pixels)
        labels = np.ascontiguousarray(labels)
        if pixels.dtype != np.uint8 or pixels.ndim != 4:
            raise ValueError(
                f"Split: pixels must be uint8 [count, channels, height, width], "
                f"not {pixels.dtype} {list(pixels.shape)}"
            )
        if labels.ndim != 1 or labels.shape[0] != pixels.shape[0]:
            raise ValueError(f"Split: {list(labels.shape)} labels for {pixels.shape[0]} images")
        if not 1 <= classes <= 256:
            raise ValueError(f"Split: {classes} classes; uint8 labels hold 1 to 256")
        if labels.size and (labels.min() < 0 or labels.max() >= classes):
            raise ValueError(f"Split: a label lies outside 0..{classes - 1}")
        channels = pixels.shape[1]
        if len(mean) != channels or len(deviation) != channels:
            raise ValueError(
                f"Split: {len(mean)} means and {len(deviation)} deviations for {channels} channels"
            )
        # Labels are stored as uint8 whatever they came as, so that the fingerprint
        # depends on the values alone.
        self.labels = labels.astype(np.uint8)
        # The split takes the pixel array over without copying it (it may be most of
        # the process's memory); read-only, nobody can change it through the split.
        self.pixels = pixels
        self.pixels.flags.writeable = False
        self.labels.flags.writeable = False
        self.classes = int(classes)
        self.mean = tuple(float(value) for value in mean)
        self.deviation = tuple(float(value) for value in deviation)
        levels = np.arange(256, dtype=np.float64) / 255.0
        self._levels: np.ndarray | None = None
        self._picked: np.ndarray | None = None
        self._table_offsets = (np.arange(pixels.shape[1], dtype=np.intp) * 256)[:, None, None]
        self._tables = np.stack(
            [(levels - centre) / spread for centre, spread in zip(self.mean, self.deviation)]
        ).astype(np.float32)

    def __len__(self) -> int:
        return self.pixels.shape[0]

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """`(channels, height, width)` of one image."""
        return self.pixels.shape[1:]

    def images(
        self, indices: np.ndarray | Sequence[int], out: np.ndarray | None = None
    ) -> np.ndarray:
        """The standardised float32 images `[len(indices), channels, height, width]`."""
        indices = np.asarray(indices, dtype=np.intp)
        shape = (indices.shape[0], *self.image_shape)
        if out is None:
            out = np.empty(shape, dtype=np.float32)
        # One lookup into the channels' tables laid end to end, through table indices
        # (level + 256 * channel) kept in a buffer between calls: a lookup per channel
        # would write a strided slice, which NumPy buffers, and convert the uint8 levels
        # to a fresh intp array (together about 2 MB a cifar10 batch, page-faulted anew
        # every step). A table lookup is exact: the float64 arithmetic happened once,
        # per level.
        count = int(np.prod(shape))
        if self._levels is None or self._levels.size < count:
            self._levels = np.empty(count, dtype=np.intp)
            self._picked = np.empty(count, dtype=np.uint8)
        levels = self._levels[:count].reshape(shape)
        picked = self._picked[:count].reshape(shape)
        if indices.size and (indices.min() < 0 or indices.max() >= len(self)):
            picked[...] = self.pixels[indices]  # negative indices count back; others raise
        else:
            np.take(self.pixels, indices, axis=0, out=picked, mode="clip")
        np.copyto(levels, picked, casting="unsafe")
        np.add(levels, self._table_offsets, out=levels)
        target = out if out.flags.c_contiguous else np.empty(shape, dtype=np.float32)
        # mode="clip" never clips here (every index is in range); mode="raise" would
        # buffer the output.
        np.take(self._tables.reshape(-1), levels, out=target, mode="clip")
        if target is not out:
            np.copyto(out, target)
        return out

    def one_hot(self, indices: np.ndarray | Sequence[int]) -> np.ndarray:
        """float32 rows `[len(indices), classes]` holding 1 at each image's label."""
        labels = self.labels[np.asarray(indices, dtype=np.intp)]
        rows = np.zeros((labels.shape[0], self.classes), dtype=np.float32)
        rows[np.arange(labels.shape[0]), labels] = 1.0
        return rows

    def class_counts(self) -> list[int]:
        """How many images each class holds, in class order."""
        return np.bincount(self.labels, minlength=self.classes).tolist()

    @cached_property
    def fingerprint(self) -> str:
        """sha256 hex over the uint8 label bytes, then the uint8 pixel bytes in C order."""
        digest = hashlib.sha256()
        digest.update(self.labels.data)
        digest.update(self.pixels.data)
        return digest.hexdigest()

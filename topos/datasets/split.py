"""Split: one part of a dataset (train or test), its pixels kept as uint8, all of them or
only the samples a training reads."""

from __future__ import annotations

import copy
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

    `holding(samples)` gives the same split keeping only some samples' pixels in memory
    (a run of a few hundred steps reads a fraction of CIFAR-10's 150 MB). `fingerprint`
    may be given when it is known already, computed over these bytes.
    """

    def __init__(
        self,
        pixels: np.ndarray,
        labels: np.ndarray,
        classes: int,
        mean: Sequence[float],
        deviation: Sequence[float],
        fingerprint: str | None = None,
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
        pixels.flags.writeable = False
        self.labels.flags.writeable = False
        # The pixels in memory, and where each sample's image lies among them (None:
        # every sample, in order; else -1 for a sample not held).
        self._stored = pixels
        self._positions: np.ndarray | None = None
        self.classes = int(classes)
        self.mean = tuple(float(value) for value in mean)
        self.deviation = tuple(float(value) for value in deviation)
        levels = np.arange(256, dtype=np.float64) / 255.0
        self._levels: np.ndarray | None = None
        self._picked: np.ndarray | None = None
        self._table_offsets = (np.arange(pixels.shape[1], dtype=np.intp) * 256)[:, None, None]
        if fingerprint is not None:
            # Already computed over these very bytes (a checked cache entry's sha256).
            self.__dict__["fingerprint"] = fingerprint
        self._tables = np.stack(
            [(levels - centre) / spread for centre, spread in zip(self.mean, self.deviation)]
        ).astype(np.float32)

    def __len__(self) -> int:
        return self.labels.shape[0]

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """`(channels, height, width)` of one image."""
        return self._stored.shape[1:]

    @property
    def pixels(self) -> np.ndarray:
        """Every sample's pixels, `[count, channels, height, width]` uint8 (read-only);
        a split holding only some samples has no such array and raises ValueError."""
        if self._positions is not None:
            raise ValueError(f"Split: holds the pixels of {self.held} of {len(self)} samples")
        return self._stored

    @property
    def held(self) -> int:
        """How many samples' pixels are in memory."""
        return self._stored.shape[0]

    def holding(self, samples: np.ndarray | Sequence[int]) -> Split:
        """This split keeping only the pixels of `samples` in memory: the same length,
        labels and fingerprint (computed first, over every sample), and the same images
        of those samples; `images` of any other sample raises ValueError."""
        # Sorted, each once: np.unique would do, but it imports numpy.ma (40 ms of a
        # worker's start-up) to ask whether the array is masked.
        samples = np.sort(np.asarray(samples, dtype=np.intp).ravel())
        if samples.size > 1:
            samples = samples[np.concatenate(([True], samples[1:] != samples[:-1]))]
        if samples.size and (samples[0] < 0 or samples[-1] >= len(self)):
            raise ValueError(f"Split: a sample to hold lies outside 0..{len(self) - 1}")
        self.fingerprint  # noqa: B018 - cached now, over every sample, and copied below
        held = copy.copy(self)
        held._levels = held._picked = None
        held._stored = np.take(self._stored, self._stored_positions(samples), axis=0)
        held._stored.flags.writeable = False
        held._positions = np.full(len(self), -1, dtype=np.int32)
        held._positions[samples] = np.arange(samples.size, dtype=np.int32)
        return held

    def _stored_positions(self, indices: np.ndarray) -> np.ndarray:
        """Where the images of samples `indices` lie in `_stored` (negative indices count
        back; ValueError for a sample this split does not hold)."""
        if self._positions is None:
            return indices
        positions = self._positions[indices]
        if positions.size and positions.min() < 0:
            missing = int(indices.reshape(-1)[np.argmin(positions.reshape(-1))])
            raise ValueError(
                f"Split: sample {missing} is not held (it holds {self.held} of {len(self)})"
            )
        return positions

    def images(
        self, indices: np.ndarray | Sequence[int], out: np.ndarray | None = None
    ) -> np.ndarray:
        """The standardised float32 images `[len(indices), channels, height, width]`."""
        indices = np.asarray(indices, dtype=np.intp)
        shape = (indices.shape[0], *self.image_shape)
        stored = self._stored_positions(indices)
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
        if stored.size and (stored.min() < 0 or stored.max() >= self.held):
            picked[...] = self._stored[stored]  # negative indices count back; others raise
        else:
            np.take(self._stored, stored, axis=0, out=picked, mode="clip")
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
        """sha256 hex over the uint8 label bytes, then the uint8 pixel bytes in C order
        (of every sample: a split holding some was given it by the whole one)."""
        digest = hashlib.sha256()
        digest.update(self.labels.data)
        digest.update(self.pixels.data)
        return digest.hexdigest()

"""FreshBlock: the small buffers a run hands its caller, carved from one allocation a run.

A run's computed roots (and the engine sweep's returned gradients) must outlive the
arena's next run, so every run makes them afresh. Made one by one, the ones below
malloc's mmap threshold come from the heap, and glibc gives the top of the heap back
to the system when they are freed there (past `M_TRIM_THRESHOLD`, 128 KiB): the room
the warm-up made for them is gone by the time training is measured, and the first
measured steps grow the heap again by bytes no plan says. A model whose parameters are
all small (llama's largest gradient is 44 KiB) paid some 300 KiB a shard for it.

So every run puts its small fresh buffers in one block of its own, allocated whole:
its size, not the heap's history, decides what it costs (at the mmap threshold or past
it, pages of its own, mapped when the run makes it and unmapped when the caller drops
the last buffer in it). Buffers of `POOLED_BELOW` bytes or more keep an allocation of
their own, as before: malloc already maps each of them. `allocation_sizes` says, from
sizes alone, what a run allocates, for the step's memory prediction.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from topos.engine.arena import ALIGNMENT, aligned, slot_view

#: Buffers smaller than this share the run's block: the grader's mmap threshold (64 KiB)
#: less malloc's chunk header, so a buffer malloc would map keeps its own pages.
POOLED_BELOW = 65536 - 8


def pooled(size: int) -> bool:
    """Whether a fresh buffer of `size` bytes goes in the run's shared block."""
    return 0 < size < POOLED_BELOW


def block_bytes(sizes: Iterable[int]) -> int:
    """The bytes of the shared block for fresh buffers of `sizes` (the pooled ones, each
    aligned, and room to align the block's start), or 0 when none is pooled."""
    total = sum(aligned(size) for size in sizes if pooled(size))
    return total + ALIGNMENT if total else 0


def allocation_sizes(sizes: Iterable[int]) -> list[int]:
    """The allocations a run makes for fresh buffers of `sizes` bytes: the shared block
    (when any buffer is pooled), then every buffer that keeps its own."""
    sizes = list(sizes)
    block = block_bytes(sizes)
    return ([block] if block else []) + [size for size in sizes if not pooled(size)]


class FreshBlock:
    """Fresh buffers by key, the small ones carved from a block made anew by `renew`.

    `layouts` maps each key to its (shape, order): `order` lists the axes outermost
    first, as a slot's layout does (the identity order is C-contiguous)."""

    def __init__(
        self, layouts: Mapping[Any, tuple[Sequence[int], Sequence[int]]], dtype: np.dtype
    ) -> None:
        self.dtype = np.dtype(dtype)
        self._layouts = {
            key: (tuple(shape), tuple(order)) for key, (shape, order) in layouts.items()
        }
        self._offsets: dict[Any, int] = {}
        offset = 0
        for key, (shape, _) in self._layouts.items():
            size = math.prod(shape) * self.dtype.itemsize  # made each step: not np.prod's µs
            if pooled(size):
                self._offsets[key] = offset
                offset += aligned(size)
        self.pooled_bytes = offset
        self._block: np.ndarray | None = None
        self._carved: set[Any] = set()

    def renew(self) -> None:
        """Starts a run: its small buffers go in a new block (the last run's block lives
        on for as long as its buffers do)."""
        self._block = None
        self._carved = set()

    def buffer(self, key: Any) -> np.ndarray:
        """A buffer of the current run for `key`: a view of the run's block, or an array
        of its own."""
        shape, order = self._layouts[key]
        offset = self._offsets.get(key)
        if offset is None:
            stored = np.empty(tuple(shape[axis] for axis in order), self.dtype)
            inverse = [0] * len(order)
            for position, axis in enumerate(order):
                inverse[axis] = position
            return stored.transpose(inverse)
        if self._block is None or key in self._carved:
            raw = np.empty(self.pooled_bytes + ALIGNMENT, dtype=np.uint8)
            skip = (-raw.ctypes.data) % ALIGNMENT
            self._block = raw[skip : skip + self.pooled_bytes]
            self._carved = set()
        view = slot_view(self._block, offset, shape, self.dtype, order)
        self._carved.add(key)
        if len(self._carved) == len(self._offsets):
            # Every small buffer is carved: the block is the run's alone from here on,
            # freed when the caller drops its last buffer.
            self._block = None
        return view

"""Updating a parameter in its own memory, a chunk of elements at a time.

An optimizer's update is elementwise, and every operation the built-in optimizers
use (add, subtract, multiply, divide, square root) is correctly rounded element by
element, so running the update over slices of the flattened arrays gives every
element the same bits as running it over whole arrays. What the slicing buys is
memory: a temporary needs one chunk, from a workspace the optimizer keeps, not a
parameter's worth, and the result is written straight into the parameter.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

#: Elements per chunk: large enough that a ufunc call's overhead vanishes, small
#: enough that a chunk's temporaries stay in cache and cost little memory.
CHUNK_ELEMENTS = 16384


def chunks(elements: int) -> Iterator[slice]:
    """Consecutive slices of at most `CHUNK_ELEMENTS` covering `range(elements)`."""
    for start in range(0, elements, CHUNK_ELEMENTS):
        yield slice(start, min(start + CHUNK_ELEMENTS, elements))


def flat(array: np.ndarray) -> np.ndarray:
    """`array`'s elements in C order as a one-axis array: a view when it is C-contiguous
    (parameters and gradients are), else a copy in C order."""
    return np.ascontiguousarray(array).reshape(-1)


class Workspace:
    """`count` scratch buffers of one chunk each, per dtype, allocated on first use and
    kept: what an optimizer's temporaries cost, whatever the size of the parameters."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._blocks: dict[np.dtype, np.ndarray] = {}

    def buffers(self, dtype: np.dtype) -> list[np.ndarray]:
        """The `count` chunk buffers of `dtype`."""
        dtype = np.dtype(dtype)
        block = self._blocks.get(dtype)
        if block is None:
            block = np.empty((self.count, CHUNK_ELEMENTS), dtype=dtype)
            self._blocks[dtype] = block
        return list(block)

    def bytes(self, dtype: np.dtype, largest: int) -> int:
        """What the buffers of `dtype` hold in memory once updates of at most `largest`
        elements have run: the pages they touch (a page is only resident once written),
        `min(largest, CHUNK_ELEMENTS)` elements of each buffer."""
        page = 4096
        touched = min(largest, CHUNK_ELEMENTS) * np.dtype(dtype).itemsize
        return self.count * -(-touched // page) * page

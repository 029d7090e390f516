"""Adjacent runs: consecutive parameters whose arrays lie back to back in memory, seen as
one flat array each, so an elementwise update runs over them in a few large calls.

The training loop keeps its parameters in one block (`ParameterMemory`), an optimizer its
moments in another (in the same order), and a sharded step's gradients arrive in one
fresh block: a transformer's two dozen small parameters are then three long arrays. An
elementwise update gives every element the bits it gets over its own parameter's array,
so stepping the run is stepping each parameter.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def address(array: np.ndarray) -> int:
    """Where `array`'s first element is (`ctypes.data`, the cheapest of NumPy's ways)."""
    return array.ctypes.data


def follows(before: np.ndarray, after: np.ndarray) -> bool:
    """Whether `after` starts where `before` ends, in the same buffer: both C-contiguous
    flat views of one base, of one dtype."""
    base = before.base
    return (
        isinstance(base, np.ndarray)
        and base.flags.c_contiguous
        and after.base is base
        and before.dtype == after.dtype
        and before.flags.c_contiguous
        and after.flags.c_contiguous
        and address(before) + before.nbytes == address(after)
    )


def span(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """One flat view over `arrays`, which must each follow the one before (`follows`)."""
    first, last = arrays[0], arrays[-1]
    if len(arrays) == 1:
        return first.reshape(-1)
    base = first.base
    flat = base.reshape(-1).view(np.uint8)
    start = address(first) - address(base)
    end = address(last) + last.nbytes - address(base)
    return flat[start:end].view(first.dtype)


def breaks(columns: Sequence[Sequence[np.ndarray]]) -> set[int]:
    """The items that start a run: item i (one flat array in each of `columns`) does,
    unless each of its arrays follows item i-1's in its column; item 0 always does."""
    count = len(columns[0]) if columns else 0
    return {0} | {
        item
        for item in range(1, count)
        if not all(follows(column[item - 1], column[item]) for column in columns)
    }

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


def span(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """One flat view over `arrays`, which must each start where the one before ends
    (items of one run: see `breaks`)."""
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
    unless each of its arrays starts where item i-1's ends in its column, both flat
    C-contiguous views of one base, of one dtype; item 0 always does."""
    count = len(columns[0]) if columns else 0
    starts = {0}
    for column in columns:
        # Each array's address read once: `ctypes.data` costs about 2 us a call.
        addresses = [address(array) for array in column]
        for item in range(1, count):
            before, after = column[item - 1], column[item]
            if item not in starts and not (
                _views_of_one_base(before, after)
                and addresses[item - 1] + before.nbytes == addresses[item]
            ):
                starts.add(item)
    return starts


def _views_of_one_base(before: np.ndarray, after: np.ndarray) -> bool:
    """Whether `before` and `after` are C-contiguous views of one C-contiguous base, of
    one dtype (so one may follow the other)."""
    base = before.base
    return (
        isinstance(base, np.ndarray)
        and base.flags.c_contiguous
        and after.base is base
        and before.dtype == after.dtype
        and before.flags.c_contiguous
        and after.flags.c_contiguous
    )


class HeldRuns:
    """Columns of arrays that never move (a training loop's parameters, an optimizer's
    moments), split once where they break (`breaks`), each run's spans remembered."""

    def __init__(self, columns: Sequence[Sequence[np.ndarray]]) -> None:
        self.columns = [list(column) for column in columns]
        self.starts = breaks(self.columns)
        self._spans: dict[tuple[int, int], tuple[np.ndarray, ...]] = {}

    def spans(self, start: int, end: int) -> tuple[np.ndarray, ...]:
        """Each column's `span` over items `start..end-1`, which must lie within a run."""
        found = self._spans.get((start, end))
        if found is None:
            found = tuple(span(column[start:end]) for column in self.columns)
            self._spans[(start, end)] = found
        return found

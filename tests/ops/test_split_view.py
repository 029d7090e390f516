"""split_axis: a view whatever the strides, writes landing in the array; and the kernels a
convnet runs every step build their views without NumPy's `as_strided`, whose dict from
`__array_interface__` interns a fresh string a call (see topos.ops.split_view)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from topos.ops.split_view import split_axis
from topos.training import Training
from topos.workloads import resolve


def _strided_arrays():
    """Arrays of rank 1-4 under slices with steps (negative ones too), transposes, a
    broadcast axis or overlapping sliding windows."""

    @st.composite
    def build(draw):
        rank = draw(st.integers(1, 3))
        extents = [draw(st.integers(1, 6)) * 2 for _ in range(rank)]
        base = np.arange(int(np.prod(extents)) * 4, dtype=np.float32).reshape(
            [extent * 2 for extent in extents[:1]] + extents[1:] + [2]
        )
        array = base[:: draw(st.sampled_from([1, 2, -1, -2]))]
        kind = draw(st.sampled_from(["plain", "transpose", "broadcast", "windows"]))
        if kind == "transpose":
            array = array.transpose(*reversed(range(array.ndim)))
        elif kind == "broadcast":
            array = np.broadcast_to(array[:, None], (array.shape[0], 4, *array.shape[1:]))
        elif kind == "windows":
            array = sliding_window_view(array, 2, axis=0)
        return array

    return build()


@settings(max_examples=200, deadline=None)
@given(array=_strided_arrays(), data=st.data())
def test_split_axis_is_the_strided_view(array, data):
    axis = data.draw(st.integers(0, array.ndim - 1))
    divisors = [d for d in range(1, array.shape[axis] + 1) if array.shape[axis] % d == 0]
    inner = data.draw(st.sampled_from(divisors))
    view = split_axis(array, axis, inner)
    step = array.strides[axis]
    expected = as_strided(
        array,
        shape=(*array.shape[:axis], array.shape[axis] // inner, inner, *array.shape[axis + 1 :]),
        strides=(*array.strides[:axis], step * inner, step, *array.strides[axis + 1 :]),
    )
    np.testing.assert_array_equal(view, expected)
    assert np.shares_memory(view, array) and view.flags.writeable == array.flags.writeable


def test_writes_through_a_split_of_a_strided_array_land_in_it():
    array = np.zeros((6, 8), dtype=np.float32)
    columns = array[:, ::2]  # strided
    split_axis(columns, 0, 3)[1, 2, :] = 7.0
    assert (array[5, ::2] == 7.0).all() and array.sum() == 7.0 * 4


@pytest.mark.parametrize("route", ["engine", "recorded", "remat"])
def test_a_convnet_step_makes_no_view_through_as_strided(route, monkeypatch):
    workload = resolve("mnist")
    training = Training(workload, route, workload.dataset(None), 2)
    training.step(0)

    def refused(*arguments, **keywords):
        raise AssertionError("as_strided called during a step")

    # sliding_window_view calls its module's own name; a module of topos may hold its own.
    monkeypatch.setitem(as_strided.__globals__, "as_strided", refused)
    for name, module in list(sys.modules.items()):
        if name.startswith("topos") and getattr(module, "as_strided", None) is as_strided:
            monkeypatch.setattr(module, "as_strided", refused)
    training.step(1)

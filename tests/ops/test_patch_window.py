"""PatchWindow: one frozen value for a convolution's window, compared by value, and
labelled in a plan's description as its fields, as the loose attributes were."""

from __future__ import annotations

import pytest

from topos import Tape, Tensor, conv2d, conv2d_max_pool
from topos.errors import ShapeError
from topos.ops.patch_window import PatchWindow


def test_a_window_compares_and_hashes_by_value():
    assert PatchWindow(3, 3, 1, 1) == PatchWindow(3, 3, 1, 1)
    assert PatchWindow(3, 3, 1, 1) != PatchWindow(3, 3, 1, 1, phases=2)
    assert len({PatchWindow(3, 3, 1, 1), PatchWindow(3, 3, 1, 1)}) == 1
    assert PatchWindow(3, 2, 2, 0).output_extents(7, 6) == (3, 3)


def test_a_window_reads_as_its_fields_in_node_labels():
    tape = Tape()
    images = tape.input(Tensor.filled([2, 3, 4, 4], 0.0))
    weights = tape.parameter(Tensor.filled([4, 3, 3, 3], 0.0))
    conv2d(images, weights, None, 1, 1)
    conv2d_max_pool(images, weights, None, 1, 1, 2)
    labels = [node.label() for node in tape.nodes if node.operation == "im2col"]
    assert labels == [
        "im2col(kernel_height=3, kernel_width=3, stride=1, padding=1)",
        "im2col(kernel_height=3, kernel_width=3, stride=1, padding=1, phases=2)",
    ]


def test_loose_window_attributes_are_refused_by_name():
    tape = Tape()
    images = tape.input(Tensor.filled([1, 1, 4, 4], 0.0))
    with pytest.raises(ShapeError, match=r"^im2col: window .* must be a PatchWindow"):
        tape.record("im2col", (images,), window=(3, 3, 1, 1))

"""sum and broadcast: one primitive each, whose attributes (never the shapes) choose the
kernel the separate primitives they replace chose by name (sum, sum_along, sum_to;
expand, broadcast_along, broadcast_to), so the merge changed no bit."""

from __future__ import annotations

import numpy as np
import pytest

from topos import Tape, Tensor
from topos.errors import ShapeError
from topos.ops import REGISTRY
from topos.ops.row_sums import column_sums


def _parameter(tape: Tape, *shape: int):
    values = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) * 0.25 - 1.0
    return tape.parameter(Tensor(list(shape), values))


def _node(value):
    return value.tape.nodes[value.index]


@pytest.mark.parametrize(
    ("record", "operation", "attributes"),
    [
        (lambda a: a.sum(), "sum", {}),
        (lambda a: a.sum_along(-1), "sum", {"axis": 1}),
        (lambda a: a.sum().full(2, 3), "broadcast", {"to_shape": (2, 3), "copy": True}),
        (lambda a: a.sum().expand(2, 3), "broadcast", {"to_shape": (2, 3)}),
        (lambda a: a.reshape(2, 1, 3).expand(4, 2, -1, 3), "broadcast", {"to_shape": (4, 2, 1, 3)}),
        (lambda a: a.broadcast_along(0, 4), "broadcast", {"axis": 0, "size": 4}),
        (lambda a: a.broadcast_to(5, 2, 3), "broadcast", {"to_shape": (5, 2, 3)}),
    ],
)
def test_each_value_method_records_the_merged_primitive(record, operation, attributes):
    value = record(_parameter(Tape(), 2, 3))
    assert _node(value).operation == operation
    assert _node(value).attributes == attributes


def test_the_attribute_not_the_shape_chooses_the_sum_kernel():
    # [2048, 256] to [256]: an axis sum (grouped np.sum) or a sum to the shape (column
    # sums in BLAS); the same shape, different kernels, each the one its old name chose.
    values = np.random.default_rng(0).standard_normal((2048, 256)).astype(np.float32)
    kernel = REGISTRY["sum"].kernel
    along = kernel(values, axis=0)
    grouped = np.sum(values.reshape(2048 // 2, 2 * 256), axis=0).reshape(2, 256).sum(axis=0)
    assert along.tobytes() == grouped.tobytes()
    assert kernel(values, to_shape=(256,)).tobytes() == column_sums(values).tobytes()
    total = np.sum(values, dtype=np.float32)
    assert kernel(values).shape == () and kernel(values).tobytes() == total.tobytes()


def test_the_copy_attribute_chooses_a_fresh_array_over_a_view():
    kernel = REGISTRY["broadcast"].kernel
    scalar = np.asarray(np.float32(1.5))
    copied = kernel(scalar, to_shape=(2, 3), copy=True)
    assert copied.flags.owndata and copied.flags.writeable and (copied == 1.5).all()
    assert not kernel(scalar, to_shape=(2, 3)).flags.writeable  # NumPy's broadcast view
    row = np.arange(3, dtype=np.float32)
    along = kernel(row, axis=0, size=4)
    assert along.shape == (4, 3) and np.shares_memory(along, row)


@pytest.mark.parametrize(
    ("record", "variant", "adjoint", "adjoint_attributes"),
    [
        (lambda a: a.sum(), {}, "broadcast", {"to_shape": (2, 3), "copy": True}),
        (lambda a: a.sum_along(0), {"axis": 0}, "broadcast", {"axis": 0, "size": 2}),
        (
            lambda a: a.tape.record("sum", (a,), to_shape=(3,)),
            {"to_shape": (3,)},
            "broadcast",
            {"to_shape": (2, 3)},
        ),
        (lambda a: a.broadcast_along(1, 4), {"axis": 1, "size": 4}, "sum", {"axis": 1}),
        (lambda a: a.broadcast_to(4, 2, 3), {"to_shape": (4, 2, 3)}, "sum", {"to_shape": (2, 3)}),
    ],
)
def test_each_variant_differentiates_into_its_own_adjoint(
    record, variant, adjoint, adjoint_attributes
):
    tape = Tape()
    a = _parameter(tape, 2, 3)
    output = record(a)
    assert _node(output).attributes == variant
    weights = tape.leaf(Tensor.filled(list(output.shape), 0.5))
    loss = (output * weights).sum()
    before = len(tape)
    tape.differentiate(loss, [a])
    appended = [(node.operation, node.attributes) for node in tape.nodes[before:]]
    assert (adjoint, adjoint_attributes) in appended


def test_the_full_variant_differentiates_into_the_sum_of_every_element():
    tape = Tape()
    a = _parameter(tape, 2, 3).sum()
    output = a.full(2, 3)
    loss = (output * tape.leaf(Tensor.filled([2, 3], 0.5))).sum()
    before = len(tape)
    tape.differentiate(loss, [a])
    sums = [node.attributes for node in tape.nodes[before:] if node.operation == "sum"]
    assert {} in sums


@pytest.mark.parametrize(
    ("operation", "attributes", "words"),
    [
        ("sum", {"axis": 0, "to_shape": (3,)}, "not both"),
        ("sum", {"to_shape": (4,)}, "not broadcast"),
        ("broadcast", {}, "needs a shape"),
        ("broadcast", {"axis": 0}, "both its axis and its size"),
        ("broadcast", {"axis": 0, "size": 2, "to_shape": (2, 2, 3)}, "not both"),
        ("broadcast", {"to_shape": (2, 3), "copy": True}, "rank-0"),
        ("broadcast", {"to_shape": (3, 2)}, "not broadcast"),
    ],
)
def test_a_bad_choice_of_attributes_is_refused(operation, attributes, words):
    a = _parameter(Tape(), 2, 3)
    with pytest.raises(ShapeError, match=words):
        a.tape.record(operation, (a,), **attributes)

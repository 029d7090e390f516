"""A primitive's specialized kernel is its kernel's own branch for those shapes (issue 47).

A plan asks each primitive once, with its operands' shapes, for a kernel with less
Python; what it answers must compute the kernel's bits on every operand a run can
bring, including one laid out other than C-contiguously (a permuted view), where it
falls back to the kernel.
"""

from __future__ import annotations

import numpy as np
import pytest

from topos.ops.primitive import REGISTRY
from topos.tensor import Shape

RNG = np.random.default_rng(47)


def _draw(shape, transposed: bool = False) -> np.ndarray:
    if transposed:
        # The same values' shape, laid out column-major: a view, not C-contiguous.
        return RNG.standard_normal(shape[::-1]).astype(np.float32).T
    return RNG.standard_normal(shape).astype(np.float32)


def _both(name: str, operands, attributes=None, out_shape=None):
    """The kernel's result and the specialized kernel's, each written into an `out`."""
    primitive = REGISTRY[name]
    attributes = attributes or {}
    special = primitive.specialize(tuple(Shape(o.shape) for o in operands), dict(attributes))
    assert special is not None, name
    shape = out_shape
    expected = primitive.kernel(*operands, out=np.empty(shape, np.float32), **attributes)
    found = special(*operands, out=np.empty(shape, np.float32), **attributes)
    return expected, found


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize(
    "left, right",
    [((8, 32), (8, 32)), ((8, 32), (32,)), ((16, 8, 8, 8), (1, 8, 1, 1)), ((8, 32), ())],
)
def test_small_elementwise_nodes_call_the_kernels_ufunc(name, left, right):
    operands = [_draw(left), _draw(right)]
    shape = np.broadcast_shapes(left, right)
    expected, found = _both(name, operands, out_shape=shape)
    assert found.tobytes() == expected.tobytes()


def test_a_big_elementwise_node_keeps_its_kernel():
    # 65536 rows of 16: the kernel regroups the loops at run time.
    shapes = (Shape([65536, 16]), Shape([16]))
    assert REGISTRY["add"].specialize(shapes, {}) is None


@pytest.mark.parametrize(
    "name, left, right",
    [
        ("matmul", (8, 32), (32, 16)),
        ("matmul_nt", (8, 32), (16, 32)),
        ("matmul_tn", (8, 32), (8, 16)),
        ("matmul", (2, 8, 32), (2, 32, 16)),
    ],
)
@pytest.mark.parametrize("transposed", [False, True])
def test_small_products_are_the_kernels_blas_call(name, left, right, transposed):
    operands = [_draw(left, transposed), _draw(right)]
    shape = REGISTRY[name].infer(Shape(left), Shape(right))
    expected, found = _both(name, operands, out_shape=tuple(shape))
    assert found.tobytes() == expected.tobytes()


def test_a_blocked_product_keeps_its_kernel():
    shapes = (Shape([32768, 27]), Shape([27, 16]))
    assert REGISTRY["matmul"].specialize(shapes, {}) is None
    assert REGISTRY["matmul_tn"].specialize((Shape([32768, 27]), Shape([32768, 16])), {}) is None


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("transposed", [False, True])
def test_a_sum_along_an_axis_is_the_kernels_reduction(axis, transposed):
    operand = _draw((6, 7, 2000), transposed)
    shape = tuple(extent for position, extent in enumerate(operand.shape) if position != axis)
    expected, found = _both("sum", [operand], {"axis": axis}, out_shape=shape)
    assert found.tobytes() == expected.tobytes()


def test_a_regrouped_sum_keeps_its_kernel():
    # 8192 rows of 16 (past the column sums' bound, reduction._COLUMN_SUMS_ELEMENTS)
    # are summed in interleaved partial sums (see reduction._groups).
    assert REGISTRY["sum"].specialize((Shape([8192, 16]),), {"axis": 0}) is None
    assert REGISTRY["sum"].specialize((Shape([4096, 16]),), {}) is None


@pytest.mark.parametrize(
    "left, right",
    [
        ((8192, 16), (16,)),
        ((16384, 8), (1, 8)),
        ((16, 8, 8, 8), (1, 8, 1, 1)),
        ((64, 128, 8), (8,)),
        ((8, 1024, 8), (1024, 8)),
        ((9000, 4), (9000, 4)),
        ((4,), (9000, 4)),
    ],
)
def test_the_shape_rule_never_bypasses_a_regrouping(left, right):
    # Where the rule lets a plan call the bare ufunc, the kernel's own run-time test
    # finds nothing to regroup on operands of those shapes, laid out densely.
    from topos.ops.primitives.arithmetic import _never_widened, _widened

    if _never_widened(left, right):
        assert _widened(_draw(left), _draw(right)) is None
    else:
        assert REGISTRY["add"].specialize((Shape(left), Shape(right)), {}) is None


@pytest.mark.parametrize(
    "operand, target",
    [
        ((16, 8, 8, 8), (1, 8, 1, 1)),  # a batch norm's statistics' gradient
        ((4096, 16), (16,)),  # a bias over many rows: one product with ones
        ((4, 3, 512, 16), (3, 1, 16)),  # leading axes, then a regrouped stretched one
        ((8, 32), (1, 32)),
    ],
)
@pytest.mark.parametrize("transposed", [False, True])
def test_a_sum_to_a_shape_is_the_kernels_sequence_of_reductions(operand, target, transposed):
    expected, found = _both(
        "sum", [_draw(operand, transposed)], {"to_shape": target}, out_shape=target
    )
    assert found.tobytes() == expected.tobytes()


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("transposed", [False, True])
def test_a_broadcast_into_a_slot_is_the_kernels_copy(axis, transposed):
    operand = _draw((6, 5), transposed)
    shape = list(operand.shape)
    shape.insert(axis, 7)
    attributes = {"axis": axis, "size": 7}
    expected, found = _both("broadcast", [operand], attributes, out_shape=tuple(shape))
    assert found.tobytes() == expected.tobytes()
    view = REGISTRY["broadcast"].specialize((Shape(operand.shape),), attributes)(
        operand, **attributes
    )
    assert view.tobytes() == REGISTRY["broadcast"].kernel(operand, **attributes).tobytes()


@pytest.mark.parametrize(
    "shape, widths",
    [
        ((16, 16), ((0, 0), (32, 16))),
        ((16, 16), ((0, 0), (0, 48))),
        ((3, 4, 5), ((1, 2), (0, 0), (3, 1))),
    ],
)
@pytest.mark.parametrize("transposed", [False, True])
def test_a_pad_is_the_kernels_zeros_and_copy(shape, widths, transposed):
    # A narrow's adjoint: a recurrent cell's gradient pads each gate's slice back.
    operand = _draw(shape, transposed)
    padded = tuple(extent + before + after for extent, (before, after) in zip(shape, widths))
    dirty = np.full(padded, 7.0, np.float32)  # a reused slot holds the last step's values
    expected, found = _both("pad", [operand], {"widths": widths}, out_shape=padded)
    assert found.tobytes() == expected.tobytes()
    special = REGISTRY["pad"].specialize((Shape(shape),), {"widths": widths})
    assert special(operand, out=dirty, widths=widths).tobytes() == expected.tobytes()
    assert special(operand, widths=widths).tobytes() == expected.tobytes()


@pytest.mark.parametrize(
    "first, second, axis, transposed",
    [((4, 16), (4, 48), 1, False), ((16, 64), (32, 64), 0, False), ((6, 5), (6, 3), 1, True)],
)
def test_a_concat_is_the_kernels_copies(first, second, axis, transposed):
    # Halves of a tiled gradient (issue 47's slice gradients); a view laid out
    # column-major copies the same elements.
    operands = [_draw(first, transposed), _draw(second, transposed)]
    shape = list(first)
    shape[axis] += second[axis]
    expected, found = _both("concat", operands, {"axis": axis}, tuple(shape))
    assert found.tobytes() == expected.tobytes()
    fresh = REGISTRY["concat"].specialize(tuple(Shape(s) for s in (first, second)), {"axis": axis})
    assert fresh(*operands).tobytes() == expected.tobytes()

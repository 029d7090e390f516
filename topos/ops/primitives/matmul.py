"""matmul, matmul_nt and matmul_tn: matrix products over the last two axes, batched over
any leading ones; `_nt` multiplies by the right operand transposed, `_tn` by the left.

The transposed forms exist so that the derivative of a product never copies a
transposed operand: BLAS reads a contiguous operand as transposed for free. Every
kernel makes its operands contiguous first and then calls BLAS the same way, so
memory layout can never change which BLAS path, and so which summation order,
computes a product. An operand the memory plan lays out other than C-contiguously
(attention's heads, a permuted view) is copied into the kernel's workspace, which the
rules below size from the operands' layouts, so the plan counts the copy.
"""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters, recorded
from topos.ops.memory_order import Layout, identity
from topos.ops.memory_rules import MemoryRules
from topos.ops.primitive import FlopsRule, declare_examples, primitive
from topos.ops.shape_rules import fail
from topos.tensor import Shape


def operand_copies(left: Shape, right: Shape, layouts) -> int:
    """Elements of the contiguous copies of the operands not laid out C-contiguously
    (none when no layouts are given)."""
    if layouts is None:
        return 0
    return sum(
        shape.volume
        for shape, layout in zip((left, right), layouts)
        if not _dense(layout, shape.rank)
    )


def _dense(layout: Layout, rank: int) -> bool:
    return layout is not None and tuple(layout) == identity(rank)


def _copies_workspace(left: Shape, right: Shape, layouts=None) -> int:
    """The operands' contiguous copies (see `operand_copies`)."""
    return operand_copies(left, right, layouts)


def _contiguous(operand: np.ndarray, workspace, start: int) -> tuple[np.ndarray, int]:
    """`operand` C-contiguous, copied (when it is not) into `workspace` from element
    `start` if it has room, else into a new array; and where the workspace's free part
    now starts. The copy's values are `np.ascontiguousarray`'s."""
    if operand.flags.c_contiguous:
        return operand, start
    if workspace is None or workspace.size - start < operand.size:
        return np.ascontiguousarray(operand), start
    copy = workspace[start : start + operand.size].reshape(operand.shape)
    np.copyto(copy, operand)
    return copy, start + operand.size


def contiguous_operands(left, right, workspace) -> tuple[np.ndarray, np.ndarray, int]:
    """`left` and `right` C-contiguous, those that are not copied into `workspace` (see
    `_contiguous`), and where the workspace's free part starts after the copies."""
    left, start = _contiguous(np.asarray(left), workspace, 0)
    right, start = _contiguous(np.asarray(right), workspace, start)
    return left, right, start


def _product_shape(
    operation: str, left: Shape, right: Shape, transpose_left: bool, transpose_right: bool
) -> Shape:
    if left.rank < 2 or right.rank < 2:
        raise fail(operation, f"shapes {left} and {right} must both have rank 2 or more")
    if left.rank != right.rank or tuple(left)[:-2] != tuple(right)[:-2]:
        raise fail(operation, f"batch axes of {left} and {right} differ")
    rows, inner = (left[-1], left[-2]) if transpose_left else (left[-2], left[-1])
    depth, columns = (right[-1], right[-2]) if transpose_right else (right[-2], right[-1])
    if inner != depth:
        raise fail(
            operation,
            f"shapes {left} and {right} do not chain ({inner} columns against {depth} rows)",
        )
    return Shape((*tuple(left)[:-2], rows, columns))


def _infer_matmul(left: Shape, right: Shape) -> Shape:
    return _product_shape("matmul", left, right, False, False)


def _derive_matmul(algebra, inputs, output, gradient, needs):
    # d(A B) = dA B + A dB: the gradient of A is G B^T, that of B is A^T G. B's is
    # made first: it is A's last use, so a big A (a convolution's patch matrix) dies
    # before A's gradient, as big, is made.
    left, right = inputs
    right_gradient = algebra.matmul_tn(left, gradient) if needs[1] else None
    return (algebra.matmul_nt(gradient, right) if needs[0] else None, right_gradient)


#: The multiply-adds (rows x depth x columns) up to which OpenBLAS on AVX-512 (its
#: SkylakeX kernels) runs a single-precision product unpacked, straight from the
#: operands: on the development machine a `[1953, 32] @ [32, 16]` product took 9.4 ns a
#: row, `[1960, 32] @ [32, 16]`, just past 10^6, 14.6 ns. Kernels that cut a product
#: into pieces cut it into pieces of at most this size.
SMALL_PRODUCT = 10**6

# Products with few columns run in row blocks, which BLAS multiplies unpacked and keeps
# in cache (the measurements: docs/performance/kernel-decisions.md). The blocks follow
# from the shapes alone, so the bits do too; they agree with the unblocked product to
# float32 rounding, not to the bit (BLAS may sum a block's rows differently from the
# whole's on another CPU). For matmul_tn, the reduction over the rows, the blocks'
# products are added in order, a group at a time onto the running sum.

#: The fewest rows a block of `matmul` may have: with fewer, a block's call costs more
#: than the unpacked path saves.
_FEWEST_BLOCK_ROWS = 128
#: The rows of a block of `matmul_tn`'s reduction (fastest of 64-2048 for cifar10's
#: kernel gradients), and how many elements the products of a group of blocks, made at
#: once and then added onto the running sum, may take (at least one block's).
_REDUCTION_BLOCK = 128
_GROUP_ELEMENTS = 1 << 15


#: The most elements a left operand may have and still be multiplied whole: blocks exist
#: to keep a long operand's rows in cache, and one this small (512 KiB of float32, a
#: transformer's `[1024, 64]` activations) is already; cutting it only adds calls. On
#: the AMD EPYC (Haswell kernels) `[1024, 64]^T @ [1024, 64]` took 0.17 ms whole against
#: 0.30 ms in blocks, `[1024, 64] @ [64, 64]` 0.10 against 0.14
#: (docs/performance/kernel-decisions.md). The image workloads' blocked products all
#: have 451584 elements or more, so keep theirs.
_WHOLE_ELEMENTS = 1 << 17


def _group(blocks: int, columns: int, width: int) -> int:
    """How many blocks' products `matmul_tn` makes at once."""
    return min(blocks, max(1, _GROUP_ELEMENTS // (columns * width)))


def _row_block(left: Shape | tuple[int, ...], right: Shape | tuple[int, ...]) -> int:
    """The rows of each block `matmul` cuts `left @ right` into (`left` `[rows, K]`), 0
    for none: the most, a power of two, that keep a block's product within
    SMALL_PRODUCT, when that is at least _FEWEST_BLOCK_ROWS and makes two blocks, and
    `left` has more than _WHOLE_ELEMENTS."""
    if len(left) != 2:
        return 0
    rows, depth = left
    if rows * depth <= _WHOLE_ELEMENTS:
        return 0
    limit = SMALL_PRODUCT // max(1, depth * right[1])
    if limit < _FEWEST_BLOCK_ROWS:
        return 0
    block = 1 << (limit.bit_length() - 1)
    return block if rows >= 2 * block else 0


def _reduction_blocks(left: Shape | tuple[int, ...], right: Shape | tuple[int, ...]) -> int:
    """How many blocks of _REDUCTION_BLOCK rows `matmul_tn` sums `left^T @ right` over
    (`left` `[rows, K]`, `right` `[rows, N]`; rows past the last block make one more
    product), 0 for none: when a block's product is within SMALL_PRODUCT, the rows make
    two blocks and `left` has more than _WHOLE_ELEMENTS."""
    if len(left) != 2:
        return 0
    rows, depth = left
    if rows * depth <= _WHOLE_ELEMENTS:
        return 0
    if _REDUCTION_BLOCK * depth * right[1] > SMALL_PRODUCT or rows < 2 * _REDUCTION_BLOCK:
        return 0
    return rows // _REDUCTION_BLOCK


#: `np.dot` itself, the C function behind NumPy's `__array_function__` dispatcher: the
#: dispatcher runs a Python function a call to find overrides (none on the plain arrays a
#: kernel gets) and then calls this one, so calling it directly computes the same thing
#: without a Python frame a product (249 on a GRU's step). Where a NumPy keeps it
#: elsewhere, the dispatcher is used.
_DOT = getattr(np.dot, "_implementation", np.dot)


def product_call(left: np.ndarray, right: np.ndarray, out: np.ndarray | None = None):
    """`left @ right` in one BLAS call: `np.dot` for two matrices (rank 2) written into
    no `out` or a C-contiguous one of their dtype, else `np.matmul`. For two matrices both
    make the same BLAS call (gemm, or syrk for `A @ A^T`), so the bits are matmul's
    (tests/ops/test_product_call.py compares them); dot skips the setup of matmul, a
    generalized ufunc: on a GRU's `[8, 32] @ [32, 32]` matmul took 2.84 us a call to
    dot's 1.64 (medians, AMD EPYC Zen 3, NumPy 2.4, load 18). Every product kernel's
    one-call path calls this, the general kernels and their plan forms alike, so the
    routes share it."""
    if (
        left.ndim == 2
        and right.ndim == 2
        and (out is None or (out.flags.c_contiguous and out.dtype == left.dtype == right.dtype))
    ):
        return _DOT(left, right, out=out)
    return np.matmul(left, right, out=out)


def _specialize_product(general, transpose_left: bool, transpose_right: bool, unblocked):
    """The plan's form of a product kernel for operands of given shapes, when `unblocked`
    says from those shapes alone that the kernel makes one BLAS call: that very call
    when both operands are C-contiguous (the kernel's own test), else the kernel itself.
    It spares a small product the kernel's Python (about 2 us a call, as much as BLAS
    takes on a GRU's 8 x 32 matrices)."""

    def specialize(shapes, attributes):
        if not unblocked(*shapes):
            return None
        if len(shapes[0]) != 2 or len(shapes[1]) != 2:
            multiply = np.matmul

            def product(left, right, out=None, workspace=None):
                if left.flags.c_contiguous and right.flags.c_contiguous:
                    if transpose_left:
                        left = left.swapaxes(-1, -2)
                    if transpose_right:
                        right = right.swapaxes(-1, -2)
                    return multiply(left, right, out=out)
                return general(left, right, out=out, workspace=workspace)

        else:
            # `product_call`'s branch for two matrices, inlined: one frame a product.
            dot, matmul_ = _DOT, np.matmul

            def product(left, right, out=None, workspace=None):
                if left.flags.c_contiguous and right.flags.c_contiguous:
                    if transpose_left:
                        left = left.T
                    if transpose_right:
                        right = right.T
                    if out is None or (
                        out.flags.c_contiguous and out.dtype == left.dtype == right.dtype
                    ):
                        return dot(left, right, out=out)
                    return matmul_(left, right, out=out)
                return general(left, right, out=out, workspace=workspace)

        product.__name__ = product.__qualname__ = general.__name__
        return product

    return specialize


def product_flops(inner_axis: int) -> FlopsRule:
    """A product's FLOPs, `2 m n k` (a multiply and an add per term): twice the output's
    volume times the reduced length, the left operand's axis `inner_axis`."""
    return lambda output, left, right, **attributes: 2 * output.volume * left[inner_axis]


@primitive(
    "matmul",
    2,
    _infer_matmul,
    _derive_matmul,
    memory=MemoryRules(workspace=_copies_workspace, workspace_reads_layouts=True),
    flops=product_flops(-1),
    specialize=lambda shapes, attributes: _specialize_product(
        matmul.kernel, False, False, lambda left, right: not _row_block(tuple(left), tuple(right))
    )(shapes, attributes),
)
def matmul(left, right, out=None, workspace=None):
    """The matrix product `left @ right`; one with few columns in blocks of rows."""
    left, right, _ = contiguous_operands(left, right, workspace)
    block = _row_block(left.shape, right.shape)
    if not block:
        return product_call(left, right, out)
    target = out if out is not None and out.flags.c_contiguous else None
    if target is None:
        target = np.empty((left.shape[0], right.shape[1]), np.result_type(left, right))
    rows, depth = left.shape
    blocked = rows - rows % block
    np.matmul(
        left[:blocked].reshape(-1, block, depth),
        right,
        out=target[:blocked].reshape(-1, block, right.shape[1]),
    )
    if blocked < rows:
        np.matmul(left[blocked:], right, out=target[blocked:])
    if out is None or out is target:
        return target
    np.copyto(out, target)
    return out


def _infer_matmul_nt(left: Shape, right: Shape) -> Shape:
    return _product_shape("matmul_nt", left, right, False, True)


def _derive_matmul_nt(algebra, inputs, output, gradient, needs):
    # C = A B^T: the gradient of A is G B, that of B is G^T A.
    left, right = inputs
    return (
        algebra.matmul(gradient, right) if needs[0] else None,
        algebra.matmul_tn(gradient, left) if needs[1] else None,
    )


@primitive(
    "matmul_nt",
    2,
    _infer_matmul_nt,
    _derive_matmul_nt,
    memory=MemoryRules(workspace=_copies_workspace, workspace_reads_layouts=True),
    flops=product_flops(-1),
    specialize=lambda shapes, attributes: _specialize_product(
        matmul_nt.kernel, False, True, lambda left, right: True
    )(shapes, attributes),
)
def matmul_nt(left, right, out=None, workspace=None):
    """`left @ right^T` (over the last two axes), BLAS reading `right` transposed."""
    left, right, _ = contiguous_operands(left, right, workspace)
    return product_call(left, np.swapaxes(right, -1, -2), out)


def _infer_matmul_tn(left: Shape, right: Shape) -> Shape:
    return _product_shape("matmul_tn", left, right, True, False)


def _derive_matmul_tn(algebra, inputs, output, gradient, needs):
    # C = A^T B: the gradient of A is B G^T, that of B is A G.
    left, right = inputs
    return (
        algebra.matmul_nt(right, gradient) if needs[0] else None,
        algebra.matmul(left, gradient) if needs[1] else None,
    )


def _matmul_tn_workspace(left: Shape, right: Shape, layouts=None) -> int:
    """The operands' contiguous copies (see `operand_copies`), then, when the reduction is
    blocked, a group of blocks' products beside the running sum and its own slot."""
    blocks = _reduction_blocks(tuple(left), tuple(right))
    products = 0 if not blocks else (_group(blocks, left[1], right[1]) + 2) * left[1] * right[1]
    return operand_copies(left, right, layouts) + products


@primitive(
    "matmul_tn",
    2,
    _infer_matmul_tn,
    _derive_matmul_tn,
    memory=MemoryRules(workspace=_matmul_tn_workspace, workspace_reads_layouts=True),
    flops=product_flops(-2),
    specialize=lambda shapes, attributes: _specialize_product(
        matmul_tn.kernel,
        True,
        False,
        lambda left, right: not _reduction_blocks(tuple(left), tuple(right)),
    )(shapes, attributes),
)
def matmul_tn(left, right, out=None, workspace=None):
    """`left^T @ right` (over the last two axes), BLAS reading `left` transposed; a long
    reduction with few columns summed block by block, the blocks' products added in
    order."""
    left, right, start = contiguous_operands(left, right, workspace)
    blocks = _reduction_blocks(left.shape, right.shape)
    if not blocks:
        return product_call(np.swapaxes(left, -1, -2), right, out)
    rows, columns = left.shape
    width = right.shape[1]
    group = _group(blocks, columns, width)
    size = (group + 2) * columns * width
    if workspace is not None and workspace.size - start >= size:
        buffer = workspace[start : start + size].reshape(group + 2, columns, width)
    else:
        buffer = np.empty((group + 2, columns, width), left.dtype)
    # products[0] is the running sum when a group is added onto it; total holds the sum.
    products, total = buffer[: group + 1], buffer[group + 1]
    block = _REDUCTION_BLOCK
    for first in range(0, blocks, group):
        count = min(group, blocks - first)
        span = slice(first * block, (first + count) * block)
        made = products[1 : count + 1]
        np.matmul(
            left[span].reshape(count, block, columns).transpose(0, 2, 1),
            right[span].reshape(count, block, width),
            out=made,
        )
        if first:
            np.copyto(products[0], total)
            made = products[: count + 1]
        np.add.reduce(made, axis=0, out=total)
    if blocks * block < rows:
        np.matmul(left[blocks * block :].T, right[blocks * block :], out=products[1])
        np.add(total, products[1], out=total)
    if out is None:
        return total.copy()
    np.copyto(out, total)
    return out


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "matmul",
    Example("matmul", normal((3, 4), (4, 2)), on_parameters(lambda a, b: a @ b)),
    Example("matmul_batched", normal((2, 3, 4), (2, 4, 2)), on_parameters(lambda a, b: a @ b)),
)

declare_examples(
    "matmul_nt",
    Example("matmul_nt", normal((3, 4), (2, 4)), recorded("matmul_nt")),
    Example("matmul_nt_batched", normal((2, 3, 4), (2, 5, 4)), recorded("matmul_nt")),
)

declare_examples(
    "matmul_tn",
    Example("matmul_tn", normal((4, 3), (4, 2)), recorded("matmul_tn")),
    Example("matmul_tn_batched", normal((2, 4, 3), (2, 4, 5)), recorded("matmul_tn")),
)

# Emission: how each is written in PyTorch and JAX (see topos.ops.emission) ------------

declare_emission("matmul", lambda xp, a, b: xp.matmul(a, b))
declare_emission("matmul_nt", lambda xp, a, b: xp.matmul(a, xp.swap_last(b)))
declare_emission("matmul_tn", lambda xp, a, b: xp.matmul(xp.swap_last(a), b))

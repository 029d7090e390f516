"""sum, broadcast and logsumexp: reductions and their adjoints.

`sum` and `broadcast` are each one primitive whose attributes choose the kernel, as the
separate primitives they replace did by their names (so no bit changed when they merged):

    sum(x)                         every element, rank 0 (`np.sum`); adjoint broadcast(copy)
    sum(x, axis=k)                 one axis out (grouped `np.sum`); adjoint broadcast(axis)
    sum(x, to_shape=s)             down to the shape x was broadcast from (`column_sums`
                                   over the leading axes); adjoint broadcast(to_shape)
    broadcast(x, to_shape=s, copy=True)
                                   a rank-0 x copied to shape s (`np.full`); adjoint sum(x)
    broadcast(x, axis=k, size=n)   a new axis of n copies (a view); adjoint sum(axis)
    broadcast(x, to_shape=s)       NumPy's broadcasting to s (a view); adjoint sum(to_shape)

The attributes, never the shapes, choose: `sum(x, axis=0)` and `sum(x, to_shape=...)`
can reach the same shape by different kernels, whose sums may round differently.

Reductions first make their operand contiguous: NumPy's summation order follows
the memory layout, and the routes must agree bit for bit whatever the layout.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters, record
from topos.ops.memory_rules import VIEW_ALWAYS, MemoryRules
from topos.ops.primitive import declare_examples, primitive
from topos.ops.row_sums import _ones, column_sums, last_axis_sums
from topos.ops.shape_rules import broadcast as broadcast_shapes
from topos.ops.shape_rules import check_axis, fail
from topos.tensor import Shape

# sum ----------------------------------------------------------------------------------


def _infer_sum(operand: Shape, axis: int | None = None, to_shape=None) -> Shape:
    if to_shape is not None:
        if axis is not None:
            raise fail("sum", "sums along an axis or down to a shape (to_shape), not both")
        target = Shape(to_shape)
        if target.rank > operand.rank or broadcast_shapes("sum", target, operand) != operand:
            raise fail("sum", f"shape {target} does not broadcast to {operand}")
        return target
    if axis is not None:
        check_axis("sum", operand, axis)
        return Shape(extent for position, extent in enumerate(operand) if position != axis)
    return Shape(())


def _derive_sum(algebra, inputs, output, gradient, needs, axis=None, to_shape=None):
    shape = algebra.shape(inputs[0])
    if to_shape is not None:
        return (algebra.broadcast(gradient, to_shape=tuple(shape)),)
    if axis is not None:
        return (algebra.broadcast(gradient, axis=axis, size=shape[axis]),)
    return (algebra.broadcast(gradient, to_shape=tuple(shape), copy=True),)


def _specialize_sum(shapes, attributes):
    """The plan's form of `sum` for an operand of a given shape: the kernel's own calls
    with the choices its Python makes from shapes made once. `sum(axis=k)` without
    regrouping (`_groups` is 1) is `np.sum`'s reduction, `np.add.reduce`, on the operand
    made contiguous, or along a floating operand's last axis the product with ones that
    `_sum_along` makes; `sum(to_shape=s)` is `_sum_to`'s passes, worked out once from
    the shapes (`_sum_to_passes`) and shared with it; a rank-0 sum keeps its kernel."""
    axis = attributes.get("axis")
    to_shape = attributes.get("to_shape")
    shape = tuple(shapes[0])
    if to_shape is not None:
        passes = _sum_to_passes(shape, tuple(to_shape))

        def sum_to(operand, out=None, axis=None, to_shape=None):
            return _run_sum_to(operand, out, passes)

        return sum_to
    if axis is None:
        return None
    if _sums_columns(shape, axis):
        count, rest = shape[0], shape[1:]
        columns = math.prod(rest)
        general = _sum_along
        multiply = np.matmul
        contiguous = np.ascontiguousarray

        def sum_columns(operand, out=None, axis=axis, to_shape=None):
            # `_sum_along`'s column sums, in one frame; another dtype takes its path.
            if operand.dtype.kind != "f":
                return general(operand, out, axis)
            matrix = contiguous(operand).reshape(count, columns)
            if out is not None and out.flags.c_contiguous:
                multiply(_ones(count, operand.dtype), matrix, out=out.reshape(columns))
                return out
            result = multiply(_ones(count, operand.dtype), matrix).reshape(rest)
            if out is None:
                return result
            np.copyto(out, result)
            return out

        return sum_columns
    if _groups(shape[axis], math.prod(shape[axis + 1 :])) != 1:
        return None
    if _sums_rows(len(shape), axis):
        rows = math.prod(shape[:-1])

        def sum_rows(operand, out=None, axis=axis, to_shape=None):
            return last_axis_sums(operand, out, rows)

        return sum_rows
    reduce = np.add.reduce
    contiguous = np.ascontiguousarray

    def sum_along(operand, out=None, axis=axis, to_shape=None):
        if not operand.flags.c_contiguous:
            operand = contiguous(operand)
        return reduce(operand, axis, None, out)

    return sum_along


@primitive("sum", 1, _infer_sum, _derive_sum, specialize=_specialize_sum)
def sum_(operand, out=None, axis=None, to_shape=None):
    """Sums every element (rank 0); with `axis`, sums out that axis; with `to_shape`,
    sums down to that shape, the one `operand` was broadcast from (see the module)."""
    if to_shape is not None:
        return _sum_to(operand, out, to_shape)
    if axis is not None:
        return _sum_along(operand, out, axis)
    return _sum_all(operand, out)


def _sum_all(operand, out):
    """The rank-0 sum of every element."""
    total = np.sum(np.ascontiguousarray(operand), dtype=operand.dtype)
    if out is None:
        return np.asarray(total)
    out[...] = total
    return out


def reduce_to(algebra, contribution, shape: Shape):
    """Sums an elementwise rule's contribution down to its operand's shape when that
    operand was broadcast: a rank-0 one by `sum`, any other by `sum(to_shape=...)`."""
    found = algebra.shape(contribution)
    if found == shape:
        return contribution
    if shape.rank == 0:
        return algebra.sum(contribution)
    return algebra.sum(contribution, to_shape=tuple(shape))


# NumPy reduces an axis with a short trailing extent in short inner loops (65536 rows
# of 16 cost as much as ten times the elements laid out in long rows), so such a
# reduction is regrouped: rows are summed in `groups` interleaved running sums, whose
# inner loops are `groups` times longer, and then the partial sums are added.
_LONG_ROW = 512


def _groups(count: int, inner: int) -> int:
    """How many interleaved partial sums reduce `count` rows of `inner` elements."""
    if inner <= 1 or inner >= _LONG_ROW:
        return 1
    want = -(-_LONG_ROW // inner)
    for groups in range(want, count // 2 + 1):
        if count % groups == 0:
            return groups
    return 1


def _sums_rows(rank: int, axis: int) -> bool:
    """Whether `sum(axis)` of an operand of `rank` sums rows: its last axis, of a
    matrix or more (a rank-1 sum is rank 0, NumPy's pairwise sum)."""
    return rank >= 2 and axis == rank - 1


#: The most elements a leading-axis sum takes as one product with ones (`column_sums`):
#: a bias's gradient over a recurrent cell's rows (`[16, 64]`: 6 us regrouped, 1 us as a
#: product) or `[4096, 16]` (3x faster on one thread); past it the regrouped sums stay,
#: as BLAS's matrix-vector product on threads has slow spells on tall operands.
_COLUMN_SUMS_ELEMENTS = 1 << 16


def _sums_columns(shape: tuple[int, ...], axis: int) -> bool:
    """Whether `sum(axis)` of an operand of `shape` sums its columns, if floating, as
    one product with ones: its leading axis, of a matrix or more, small enough."""
    return axis == 0 and len(shape) >= 2 and math.prod(shape) <= _COLUMN_SUMS_ELEMENTS


def _sum_along(operand, out, axis):
    """Sums out one axis, in an order fixed by the shape alone: a floating operand's
    last axis as a product with ones (`last_axis_sums`), and a small leading one
    (`column_sums`); else, when the axis has a short trailing extent, row i joins
    partial sum i mod g (each a running sum in row order), then the g partial sums are
    added in order."""
    operand = np.ascontiguousarray(operand)
    shape = operand.shape
    if _sums_rows(len(shape), axis):
        return last_axis_sums(operand, out, math.prod(shape[:-1]))
    if operand.dtype.kind == "f" and _sums_columns(shape, axis):
        result = column_sums(operand.reshape(shape[0], math.prod(shape[1:]))).reshape(shape[1:])
        if out is None:
            return result
        np.copyto(out, result)
        return out
    outer = math.prod(shape[:axis])
    count, inner = shape[axis], math.prod(shape[axis + 1 :])
    groups = _groups(count, inner)
    if groups == 1:
        return np.sum(operand, axis=axis, out=out)
    partial = np.sum(operand.reshape(outer, count // groups, groups * inner), axis=1)
    result = np.sum(partial.reshape(outer, groups, inner), axis=1)
    result = result.reshape(shape[:axis] + shape[axis + 1 :])
    if out is None:
        return result
    np.copyto(out, result)
    return out


def _broadcast_axes(operand: tuple[int, ...], target: tuple[int, ...]) -> tuple[int, tuple]:
    """How `operand` broadcasts to `target`: the count of leading axes it lacks, and the
    axes of `target` (past those) where it has extent 1 and `target` does not."""
    lead = len(target) - len(operand)
    stretched = tuple(
        lead + axis
        for axis, extent in enumerate(operand)
        if extent == 1 and target[lead + axis] != 1
    )
    return lead, stretched


def _sum_to(operand, out, shape):
    """Sums `operand` down to `shape`, the shape it was broadcast from, by the passes
    `_sum_to_passes` works out from the two shapes alone."""
    return _run_sum_to(operand, out, _sum_to_passes(operand.shape, tuple(shape)))


@functools.lru_cache(maxsize=1024)
def _sum_to_passes(operand: tuple[int, ...], target: tuple[int, ...]) -> tuple:
    """How `_sum_to` sums `operand` down to `target`, from the shapes alone: the
    operand's axes of extent 1 dropped and neighbours of one kind merged, kept axes with
    kept and summed (the leading ones `target` lacks, and its stretched ones) with
    summed, so a batch norm's `[N, C, H, W]` to `[1, C, 1, 1]` is `[N, C, H*W]`. Then a
    leading summed group is summed first over the rows it makes (`column_sums`: one
    product with ones, long rows), and each other summed group from the last
    (`_sum_along`: the last axis as a product with ones). Returns (merged shape, passes
    of (axis, leading)), an order fixed by the shapes (and the machine's BLAS)."""
    lead, stretched = _broadcast_axes(target, operand)
    summed = set(range(lead)) | set(stretched)
    merged: list[list] = []  # [extent, summed] per group
    for axis, extent in enumerate(operand):
        if extent == 1:
            continue
        kind = axis in summed
        if merged and merged[-1][1] == kind:
            merged[-1][0] *= extent
        else:
            merged.append([extent, kind])
    passes = []
    groups = [kind for _, kind in merged]
    if len(groups) > 1 and groups[0]:
        passes.append((0, True))
        groups = groups[1:]
    for axis in range(len(groups) - 1, -1, -1):
        if groups[axis]:
            passes.append((axis, False))
    return tuple(extent for extent, _ in merged), tuple(passes), target


def _run_sum_to(operand, out, passes: tuple):
    """`_sum_to`'s passes (see `_sum_to_passes`) on `operand`, into `out` if given."""
    merged, steps, target = passes
    result = np.ascontiguousarray(operand).reshape(merged)
    for axis, leading in steps:
        if leading:
            rows = result.shape[0]
            trailing = result.shape[1:]
            result = column_sums(result.reshape(rows, math.prod(trailing))).reshape(trailing)
        else:
            result = _sum_along(result, None, axis)
    result = result.reshape(target)
    if out is None:
        return np.ascontiguousarray(result)
    np.copyto(out, result)
    return out


# broadcast ----------------------------------------------------------------------------


def _infer_broadcast(
    operand: Shape, to_shape=None, copy: bool = False, axis: int | None = None, size=None
) -> Shape:
    if axis is not None or size is not None:
        if to_shape is not None or copy:
            raise fail("broadcast", "inserts an axis (axis, size) or goes to_shape, not both")
        if axis is None or size is None:
            raise fail("broadcast", "an inserted axis needs both its axis and its size")
        if not 0 <= axis <= operand.rank:
            raise fail("broadcast", f"axis {axis} cannot be inserted into shape {operand}")
        if size < 0:
            raise fail("broadcast", f"size {size} is negative")
        extents = list(operand)
        extents.insert(axis, size)
        return Shape(extents)
    if to_shape is None:
        raise fail("broadcast", "needs a shape (to_shape) or an axis to insert (axis, size)")
    target = Shape(to_shape)
    if copy:
        if operand.rank != 0:
            raise fail("broadcast", f"only a rank-0 operand is copied (full), not shape {operand}")
        return target
    if broadcast_shapes("broadcast", operand, target) != target:
        raise fail("broadcast", f"shape {operand} does not broadcast to {target}")
    return target


def _derive_broadcast(
    algebra, inputs, output, gradient, needs, to_shape=None, copy=False, axis=None, size=None
):
    if axis is not None:
        return (algebra.sum(gradient, axis=axis),)
    if copy:
        return (algebra.sum(gradient),)
    return (algebra.sum(gradient, to_shape=tuple(algebra.shape(inputs[0]))),)


def _broadcast_view(copy: bool = False, **attributes) -> str | None:
    # A copy (`np.full`) owns its output; the other two kernels return a view.
    return None if copy else VIEW_ALWAYS


@primitive(
    "broadcast",
    1,
    _infer_broadcast,
    _derive_broadcast,
    memory=MemoryRules(view=_broadcast_view),
    specialize=lambda shapes, attributes: _specialize_broadcast(attributes),
)
def broadcast(operand, out=None, to_shape=None, copy=False, axis=None, size=None):
    """`operand` repeated: with `axis` and `size`, along a new axis (a read-only view);
    with `to_shape`, by NumPy's broadcasting rules (a view); with `to_shape` and `copy`,
    a rank-0 operand filled into a fresh array (see the module)."""
    if axis is not None:
        return _broadcast_along(operand, out, axis, size)
    if copy:
        return _full(operand, out, to_shape)
    return _broadcast_to(operand, out, to_shape)


def _specialize_broadcast(attributes):
    """The plan's form of `broadcast(axis=k, size=n)` writing into a slot (`out`): the
    operand with its axis of 1 inserted (a reshape, `np.expand_dims`'s view) copied into
    `out`, which broadcasts it as `np.broadcast_to` would; the view form (no `out`) keeps
    its kernel, as do the other forms."""
    axis = attributes.get("axis")
    if axis is None:
        return None
    general = broadcast.kernel
    copy_into = np.copyto

    def broadcast_along(operand, out=None, to_shape=None, copy=False, axis=axis, size=None):
        if out is None:
            return general(operand, None, axis=axis, size=size)
        shape = operand.shape
        copy_into(out, operand.reshape((*shape[:axis], 1, *shape[axis:])))
        return out

    return broadcast_along


def _full(operand, out, shape):
    """A rank-0 operand repeated to `shape`."""
    if out is None:
        return np.full(shape, operand, dtype=operand.dtype)
    out[...] = operand
    return out


def _broadcast_along(operand, out, axis, size):
    """Inserts a new axis at `axis` holding `size` copies (a read-only view)."""
    shape = (*operand.shape[:axis], size, *operand.shape[axis:])
    if out is None and isinstance(operand, np.ndarray) and operand.flags.c_contiguous:
        # The view made directly, its new axis of stride 0: np.broadcast_to builds the
        # same view through an nditer, about 10 us a call (a bias broadcast down a
        # transformer's rows, 15 a gpt step), this about 1.
        strides = (*operand.strides[:axis], 0, *operand.strides[axis:])
        view = np.ndarray(shape, operand.dtype, buffer=operand, strides=strides)
        view.flags.writeable = False
        return view
    view = np.broadcast_to(np.expand_dims(operand, axis), shape)
    if out is None:
        return view
    np.copyto(out, view)
    return out


def _broadcast_to(operand, out, shape):
    """`operand` repeated along the axes it is broadcast over, NumPy's rules (a view)."""
    view = np.broadcast_to(operand, shape)
    if out is None:
        return view
    np.copyto(out, view)
    return out


# logsumexp ----------------------------------------------------------------------------


def _infer_logsumexp(operand: Shape, axis: int) -> Shape:
    check_axis("logsumexp", operand, axis)
    return Shape(extent for position, extent in enumerate(operand) if position != axis)


def _derive_logsumexp(algebra, inputs, output, gradient, needs, axis):
    (operand,) = inputs
    extent = algebra.shape(operand)[axis]
    spread = algebra.broadcast(output, axis=axis, size=extent)
    probabilities = algebra.exp(algebra.sub(operand, spread))
    return (algebra.mul(algebra.broadcast(gradient, axis=axis, size=extent), probabilities),)


def _logsumexp_workspace(operand: Shape, axis: int) -> int:
    # The shifted exponentials, as large as the operand (gpt's logits: 400 KiB a shard).
    return operand.volume


@primitive(
    "logsumexp",
    1,
    _infer_logsumexp,
    _derive_logsumexp,
    memory=MemoryRules(workspace=_logsumexp_workspace),
)
def logsumexp(operand, out=None, workspace=None, axis=0):
    """log(sum(exp(x))) along one axis, shifted by the maximum so it never overflows; the
    shifted exponentials in `workspace` when given (the same C-ordered values, so the
    sum's order and bits are those of a fresh array)."""
    operand = np.ascontiguousarray(operand)
    if operand.shape[axis] == 0:
        # The sum over nothing is 0, and its logarithm -inf.
        empty = np.full(np.delete(operand.shape, axis), -np.inf, dtype=operand.dtype)
        return empty if out is None else np.copyto(out, empty) or out
    peak = np.max(operand, axis=axis, keepdims=True)
    # An all -inf (or infinite) lane would make the shift NaN; shift it by zero instead.
    peak = np.where(np.isfinite(peak), peak, operand.dtype.type(0))
    if workspace is not None and workspace.size >= operand.size:
        shifted = workspace[: operand.size].reshape(operand.shape)
    else:
        shifted = np.empty_like(operand)
    np.subtract(operand, peak, out=shifted)
    np.exp(shifted, out=shifted)
    total = np.sum(shifted, axis=axis)
    return np.add(np.log(total), np.squeeze(peak, axis=axis), out=out)


# Examples: what each primitive's derivative test differentiates, every kernel of each --

declare_examples(
    "sum",
    Example("sum", normal((2, 3)), on_parameters(lambda a: a.sum())),
    Example("sum_along", normal((2, 3, 4)), on_parameters(lambda a: a.sum_along(1))),
    Example(
        "sum_to_rows", normal((2, 3, 4)), on_parameters(lambda a: record("sum", a, to_shape=(4,)))
    ),
    Example(
        "sum_to_keepdims",
        normal((2, 3, 4)),
        on_parameters(lambda a: record("sum", a, to_shape=(2, 1, 4))),
    ),
    Example(
        "sum_to_mixed",
        normal((2, 3, 4)),
        on_parameters(lambda a: record("sum", a, to_shape=(3, 1))),
    ),
)

declare_examples(
    "broadcast",
    Example("full", normal(()), on_parameters(lambda a: a.full(2, 3))),
    Example("expand", normal((3, 1)), on_parameters(lambda a: a.expand(2, -1, 4))),
    Example("broadcast_along", normal((2, 4)), on_parameters(lambda a: a.broadcast_along(1, 3))),
    Example("broadcast_to", normal((3, 1)), on_parameters(lambda a: a.broadcast_to(2, 3, 4))),
)

declare_examples(
    "logsumexp",
    Example("logsumexp", normal((3, 4)), on_parameters(lambda a: a.logsumexp(1))),
    Example("logsumexp_axis0", normal((3, 4)), on_parameters(lambda a: a.logsumexp(0))),
)

# Emission: how each is written in PyTorch and JAX (see topos.ops.emission) ------------


def _emit_sum(xp, x, axis=None, to_shape=None):
    if to_shape is not None:
        return xp.sum_to(x, to_shape)
    return xp.sum(x) if axis is None else xp.sum(x, axis=axis)


def _emit_broadcast(xp, x, to_shape=None, copy=False, axis=None, size=None):
    if axis is not None:
        extents = tuple(x.shape)
        inserted = xp.reshape(x, (*extents[:axis], 1, *extents[axis:]))
        return xp.broadcast_to(inserted, (*extents[:axis], size, *extents[axis:]))
    return xp.broadcast_to(x, tuple(to_shape))


declare_emission("sum", _emit_sum)
declare_emission("broadcast", _emit_broadcast)
declare_emission("logsumexp", lambda xp, x, axis=0: xp.logsumexp(x, axis))

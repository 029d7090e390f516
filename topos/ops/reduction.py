"""sum, expand, sum_along, broadcast_along, logsumexp, sum_to and broadcast_to: reductions and
their adjoints.

Reductions first make their operand contiguous: NumPy's summation order follows
the memory layout, and the routes must agree bit for bit whatever the layout.
"""

from __future__ import annotations

import numpy as np

from topos.ops.example import Example, normal, on_parameters, record
from topos.ops.memory_rules import VIEW_ALWAYS, MemoryRules
from topos.ops.primitive import declare_examples, primitive
from topos.ops.row_sums import column_sums
from topos.ops.shape_rules import broadcast, check_axis, fail
from topos.tensor import Shape


def _infer_sum(operand: Shape) -> Shape:
    return Shape(())


def _derive_sum(algebra, inputs, output, gradient, needs):
    return (algebra.expand(gradient, shape=tuple(algebra.shape(inputs[0]))),)


@primitive("sum", 1, _infer_sum, _derive_sum)
def sum_all(operand, out=None):
    """The rank-0 sum of every element."""
    total = np.sum(np.ascontiguousarray(operand), dtype=operand.dtype)
    if out is None:
        return np.asarray(total)
    out[...] = total
    return out


def reduce_to(algebra, contribution, shape: Shape):
    """Sums an elementwise rule's contribution down to its operand's shape when that
    operand was broadcast: a rank-0 one by `sum`, any other by `sum_to`."""
    found = algebra.shape(contribution)
    if found == shape:
        return contribution
    if shape.rank == 0:
        return algebra.sum(contribution)
    return algebra.sum_to(contribution, shape=tuple(shape))


def _infer_expand(operand: Shape, shape: tuple[int, ...]) -> Shape:
    if operand.rank != 0:
        raise fail("expand", f"only a rank-0 operand expands, not shape {operand}")
    return Shape(shape)


def _derive_expand(algebra, inputs, output, gradient, needs, shape):
    return (algebra.sum(gradient),)


@primitive("expand", 1, _infer_expand, _derive_expand)
def expand(operand, out=None, shape=()):
    """A rank-0 operand repeated to `shape`."""
    if out is None:
        return np.full(shape, operand, dtype=operand.dtype)
    out[...] = operand
    return out


def _infer_sum_along(operand: Shape, axis: int) -> Shape:
    check_axis("sum_along", operand, axis)
    return Shape(extent for position, extent in enumerate(operand) if position != axis)


def _derive_sum_along(algebra, inputs, output, gradient, needs, axis):
    return (algebra.broadcast_along(gradient, axis=axis, size=algebra.shape(inputs[0])[axis]),)


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


@primitive("sum_along", 1, _infer_sum_along, _derive_sum_along)
def sum_along(operand, out=None, axis=0):
    """Sums out one axis, in an order fixed by the shape alone: when the axis has a
    short trailing extent, row i joins partial sum i mod g (each a running sum in row
    order), then the g partial sums are added in order."""
    operand = np.ascontiguousarray(operand)
    shape = operand.shape
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    count, inner = shape[axis], int(np.prod(shape[axis + 1 :], dtype=np.int64))
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


def _infer_broadcast_along(operand: Shape, axis: int, size: int) -> Shape:
    if not 0 <= axis <= operand.rank:
        raise fail("broadcast_along", f"axis {axis} cannot be inserted into shape {operand}")
    if size < 0:
        raise fail("broadcast_along", f"size {size} is negative")
    extents = list(operand)
    extents.insert(axis, size)
    return Shape(extents)


def _derive_broadcast_along(algebra, inputs, output, gradient, needs, axis, size):
    return (algebra.sum_along(gradient, axis=axis),)


@primitive(
    "broadcast_along",
    1,
    _infer_broadcast_along,
    _derive_broadcast_along,
    memory=MemoryRules(view=VIEW_ALWAYS),
)
def broadcast_along(operand, out=None, axis=0, size=1):
    """Inserts a new axis at `axis` holding `size` copies (a read-only view)."""
    expanded = np.expand_dims(operand, axis)
    shape = (*operand.shape[:axis], size, *operand.shape[axis:])
    view = np.broadcast_to(expanded, shape)
    if out is None:
        return view
    np.copyto(out, view)
    return out


def _infer_logsumexp(operand: Shape, axis: int) -> Shape:
    check_axis("logsumexp", operand, axis)
    return Shape(extent for position, extent in enumerate(operand) if position != axis)


def _derive_logsumexp(algebra, inputs, output, gradient, needs, axis):
    (operand,) = inputs
    extent = algebra.shape(operand)[axis]
    spread = algebra.broadcast_along(output, axis=axis, size=extent)
    probabilities = algebra.exp(algebra.sub(operand, spread))
    return (algebra.mul(algebra.broadcast_along(gradient, axis=axis, size=extent), probabilities),)


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


def _infer_sum_to(operand: Shape, shape: tuple[int, ...]) -> Shape:
    target = Shape(shape)
    if target.rank > operand.rank or broadcast("sum_to", target, operand) != operand:
        raise fail("sum_to", f"shape {target} does not broadcast to {operand}")
    return target


def _derive_sum_to(algebra, inputs, output, gradient, needs, shape):
    return (algebra.broadcast_to(gradient, shape=tuple(algebra.shape(inputs[0]))),)


@primitive("sum_to", 1, _infer_sum_to, _derive_sum_to)
def sum_to(operand, out=None, shape=()):
    """Sums `operand` down to `shape`, the shape it was broadcast from: the leading axes
    first, over the rows they make, as one product with a vector of ones (`column_sums`:
    `[B, T, D]` to `[D]` in BLAS), then each stretched axis in turn, from the last, by
    `sum_along`; an order fixed by the shapes (and the machine's BLAS)."""
    operand = np.ascontiguousarray(operand)
    lead, stretched = _broadcast_axes(tuple(shape), operand.shape)
    result = operand
    if lead:
        rows = int(np.prod(operand.shape[:lead], dtype=np.int64))
        trailing = operand.shape[lead:]
        columns = int(np.prod(trailing, dtype=np.int64))
        result = column_sums(result.reshape(rows, columns)).reshape(trailing)
    for axis in reversed(stretched):
        result = sum_along.kernel(result, axis=axis - lead)
        result = np.expand_dims(result, axis - lead)
    result = result.reshape(shape)
    if out is None:
        return np.ascontiguousarray(result)
    np.copyto(out, result)
    return out


def _infer_broadcast_to(operand: Shape, shape: tuple[int, ...]) -> Shape:
    target = Shape(shape)
    if broadcast("broadcast_to", operand, target) != target:
        raise fail("broadcast_to", f"shape {operand} does not broadcast to {target}")
    return target


def _derive_broadcast_to(algebra, inputs, output, gradient, needs, shape):
    return (algebra.sum_to(gradient, shape=tuple(algebra.shape(inputs[0]))),)


@primitive(
    "broadcast_to",
    1,
    _infer_broadcast_to,
    _derive_broadcast_to,
    memory=MemoryRules(view=VIEW_ALWAYS),
)
def broadcast_to(operand, out=None, shape=()):
    """`operand` repeated along the axes it is broadcast over, NumPy's rules (a view)."""
    view = np.broadcast_to(operand, shape)
    if out is None:
        return view
    np.copyto(out, view)
    return out


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "sum",
    Example("sum", normal((2, 3)), on_parameters(lambda a: a.sum())),
)

declare_examples(
    "expand",
    Example("expand", normal(()), on_parameters(lambda a: a.expand(2, 3))),
)

declare_examples(
    "sum_along",
    Example("sum_along", normal((2, 3, 4)), on_parameters(lambda a: a.sum_along(1))),
)

declare_examples(
    "broadcast_along",
    Example("broadcast_along", normal((2, 4)), on_parameters(lambda a: a.broadcast_along(1, 3))),
)

declare_examples(
    "logsumexp",
    Example("logsumexp", normal((3, 4)), on_parameters(lambda a: a.logsumexp(1))),
    Example("logsumexp_axis0", normal((3, 4)), on_parameters(lambda a: a.logsumexp(0))),
)

declare_examples(
    "sum_to",
    Example(
        "sum_to_rows", normal((2, 3, 4)), on_parameters(lambda a: record("sum_to", a, shape=(4,)))
    ),
    Example(
        "sum_to_keepdims",
        normal((2, 3, 4)),
        on_parameters(lambda a: record("sum_to", a, shape=(2, 1, 4))),
    ),
    Example(
        "sum_to_mixed",
        normal((2, 3, 4)),
        on_parameters(lambda a: record("sum_to", a, shape=(3, 1))),
    ),
)

declare_examples(
    "broadcast_to",
    Example("broadcast_to", normal((3, 1)), on_parameters(lambda a: a.broadcast_to(2, 3, 4))),
)

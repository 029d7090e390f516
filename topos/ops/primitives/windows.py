"""unfold and fold: sliding windows along one axis, and their adjoint, the col2im.

`unfold(axis, size, stride)` turns extent L into (L - size) // stride + 1
windows and appends a new last axis of `size` lanes; `fold(axis, length,
stride)` adds every window lane back onto the position it came from.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters
from topos.ops.memory_rules import VIEW_ALWAYS, MemoryRules
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import check_axis, fail
from topos.tensor import Shape


def _infer_unfold(operand: Shape, axis: int, size: int, stride: int) -> Shape:
    check_axis("unfold", operand, axis)
    if size < 1 or stride < 1:
        raise fail("unfold", f"window size {size} and stride {stride} must be positive")
    if operand[axis] < size:
        raise fail("unfold", f"window size {size} exceeds axis {axis} of shape {operand}")
    extents = list(operand)
    extents[axis] = (operand[axis] - size) // stride + 1
    return Shape((*extents, size))


def _derive_unfold(algebra, inputs, output, gradient, needs, axis, size, stride):
    return (
        algebra.fold(gradient, axis=axis, length=algebra.shape(inputs[0])[axis], stride=stride),
    )


@primitive("unfold", 1, _infer_unfold, _derive_unfold, memory=MemoryRules(view=VIEW_ALWAYS))
def unfold(operand, out=None, axis=0, size=1, stride=1):
    """Sliding windows along `axis` as a strided view; lanes form the new last axis."""
    windows = sliding_window_view(operand, size, axis=axis)
    if stride != 1:
        windows = windows[(slice(None),) * axis + (slice(None, None, stride),)]
    if out is None:
        return windows
    np.copyto(out, windows)
    return out


def _infer_fold(operand: Shape, axis: int, length: int, stride: int) -> Shape:
    if operand.rank < 2:
        raise fail("fold", f"shape {operand} has no window axis")
    check_axis("fold", Shape(tuple(operand)[:-1]), axis)
    if stride < 1:
        raise fail("fold", f"stride {stride} must be positive")
    windows, size = operand[axis], operand[-1]
    if windows < 1 or size < 1:
        # unfold never makes these, so they have no adjoint to differentiate through.
        raise fail(
            "fold", f"shape {operand} has {windows} windows of {size} lanes; both must be positive"
        )
    if (windows - 1) * stride + size > length:
        raise fail(
            "fold", f"{windows} windows of {size} at stride {stride} overrun length {length}"
        )
    extents = list(operand)[:-1]
    extents[axis] = length
    return Shape(extents)


def _derive_fold(algebra, inputs, output, gradient, needs, axis, length, stride):
    windows, size = algebra.shape(inputs[0])[axis], algebra.shape(inputs[0])[-1]
    lanes = algebra.unfold(gradient, axis=axis, size=size, stride=stride)
    # With slack past the last window, unfolding the whole length finds extra windows
    # that the fold never wrote: they receive no gradient.
    if algebra.shape(lanes)[axis] != windows:
        lanes = algebra.narrow(lanes, axis=axis, start=0, length=windows)
    return (lanes,)


@primitive("fold", 1, _infer_fold, _derive_fold)
def fold(operand, out=None, axis=0, length=1, stride=1):
    """Accumulates window lanes back onto `axis`, lane 0 first, so the order is fixed."""
    windows, size = operand.shape[axis], operand.shape[-1]
    shape = list(operand.shape[:-1])
    shape[axis] = length
    if out is None:
        out = np.zeros(shape, dtype=operand.dtype)
    else:
        out.fill(0)
    leading = (slice(None),) * axis
    for lane in range(size):
        stop = lane + stride * (windows - 1) + 1
        out[(*leading, slice(lane, stop, stride))] += operand[..., lane]
    return out


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "unfold",
    Example("unfold", normal((2, 7)), on_parameters(lambda a: a.unfold(1, 3, 1))),
    Example("unfold_stride2", normal((2, 7)), on_parameters(lambda a: a.unfold(1, 3, 2))),
    Example("unfold_stride2_remainder", normal((2, 6)), on_parameters(lambda a: a.unfold(1, 3, 2))),
)

declare_examples(
    "fold",
    Example("fold", normal((2, 4, 3)), on_parameters(lambda a: a.fold(1, 6, 1))),
    Example("fold_stride2", normal((2, 3, 2)), on_parameters(lambda a: a.fold(1, 6, 2))),
)

# Emission: unfold as one take along the axis by a [windows, size] index map, fold as its
# adjoint, one add along the axis ---------------------------------------------------------


def _window_indices(windows: int, size: int, stride: int) -> np.ndarray:
    """Position `w * stride + k` along the axis of lane `k` of window `w`: `[windows, size]`."""
    return np.arange(windows)[:, None] * stride + np.arange(size)[None, :]


def _emit_unfold(xp, x, axis=0, size=1, stride=1):
    windows = (x.shape[axis] - size) // stride + 1
    taken = xp.take(x, _window_indices(windows, size, stride), axis)
    return xp.move_axis(taken, axis + 1, len(taken.shape) - 1)


def _emit_fold(xp, x, axis=0, length=1, stride=1):
    windows, size = x.shape[axis], x.shape[-1]
    beside = xp.move_axis(x, len(x.shape) - 1, axis + 1)
    merged = xp.reshape(beside, (*beside.shape[:axis], windows * size, *beside.shape[axis + 2 :]))
    return xp.add_along(length, axis, _window_indices(windows, size, stride).reshape(-1), merged)


declare_emission("unfold", _emit_unfold)
declare_emission("fold", _emit_fold)

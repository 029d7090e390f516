"""gather and scatter: picking entries along one axis, and adding them back."""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import check_axis, fail, replace_axis
from topos.tensor import Shape


def _infer_gather(operand: Shape, axis: int, indices: tuple[int, ...]) -> Shape:
    check_axis("gather", operand, axis)
    if any(not 0 <= index < operand[axis] for index in indices):
        raise fail("gather", f"an index lies outside axis {axis} of shape {operand}")
    return replace_axis(operand, axis, len(indices))


def _derive_gather(algebra, inputs, output, gradient, needs, axis, indices):
    return (
        algebra.scatter(
            gradient, axis=axis, indices=indices, length=algebra.shape(inputs[0])[axis]
        ),
    )


@primitive("gather", 1, _infer_gather, _derive_gather)
def gather(operand, out=None, axis=0, indices=()):
    """The entries at `indices` along `axis`, in that order (repeats allowed)."""
    return np.take(operand, np.asarray(indices, dtype=np.intp), axis=axis, out=out)


def _infer_scatter(operand: Shape, axis: int, indices: tuple[int, ...], length: int) -> Shape:
    check_axis("scatter", operand, axis)
    if operand[axis] != len(indices):
        raise fail("scatter", f"{len(indices)} indices for axis {axis} of shape {operand}")
    if any(not 0 <= index < length for index in indices):
        raise fail("scatter", f"an index lies outside length {length}")
    return replace_axis(operand, axis, length)


def _derive_scatter(algebra, inputs, output, gradient, needs, axis, indices, length):
    return (algebra.gather(gradient, axis=axis, indices=indices),)


@primitive("scatter", 1, _infer_scatter, _derive_scatter)
def scatter(operand, out=None, axis=0, indices=(), length=1):
    """Adds entry i of `axis` onto position indices[i], in index order."""
    shape = list(operand.shape)
    shape[axis] = length
    if out is None:
        out = np.zeros(shape, dtype=operand.dtype)
    else:
        out.fill(0)
    np.add.at(out, (slice(None),) * axis + (np.asarray(indices, dtype=np.intp),), operand)
    return out


def _scatter(value):
    return value.tape.record("scatter", (value,), axis=1, indices=(0, 2, 2, 1), length=3)


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "gather",
    Example("gather", normal((3, 4)), on_parameters(lambda a: a.gather(1, (2, 0, 2, 1)))),
)

declare_examples(
    "scatter",
    Example("scatter", normal((2, 4)), on_parameters(_scatter)),
)

# Emission: gather as a take, scatter as its adjoint, an add along the axis -----------


def _emit_scatter(xp, x, axis=0, indices=(), length=1):
    return xp.add_along(length, axis, np.asarray(indices, dtype=np.int64), x)


declare_emission(
    "gather",
    lambda xp, x, axis=0, indices=(): xp.take(x, np.asarray(indices, dtype=np.int64), axis),
)
declare_emission("scatter", _emit_scatter)

"""permute and reshape: the same elements under another arrangement of axes."""

from __future__ import annotations

import numpy as np

from topos.ops.primitive import primitive
from topos.ops.shape_rules import fail
from topos.tensor import Shape


def _infer_permute(operand: Shape, axes: tuple[int, ...]) -> Shape:
    if sorted(axes) != list(range(operand.rank)):
        raise fail("permute", f"axes {list(axes)} are not a permutation of shape {operand}")
    return Shape(operand[axis] for axis in axes)


def _derive_permute(algebra, inputs, output, gradient, needs, axes):
    inverse = [0] * len(axes)
    for position, axis in enumerate(axes):
        inverse[axis] = position
    return (algebra.permute(gradient, tuple(inverse)),)


@primitive("permute", 1, _infer_permute, _derive_permute)
def permute(operand, out=None, axes=()):
    """Reorders the axes (a view where NumPy can give one)."""
    view = np.transpose(operand, axes)
    if out is None:
        return view
    np.copyto(out, view)
    return out


def _infer_reshape(operand: Shape, shape: tuple[int, ...]) -> Shape:
    target = Shape(shape)
    if target.volume != operand.volume:
        raise fail(
            "reshape",
            f"shape {operand} ({operand.volume} elements) cannot become {target} "
            f"({target.volume} elements)",
        )
    return target


def _derive_reshape(algebra, inputs, output, gradient, needs, shape):
    return (algebra.reshape(gradient, algebra.shape(inputs[0])),)


@primitive("reshape", 1, _infer_reshape, _derive_reshape)
def reshape(operand, out=None, shape=()):
    """The elements in row-major order under another shape."""
    if out is None:
        return np.reshape(operand, shape)
    np.copyto(out, np.reshape(operand, shape))
    return out

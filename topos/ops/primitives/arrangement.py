"""permute and reshape: the same elements under another arrangement of axes."""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters
from topos.ops.memory_rules import VIEW_ALWAYS, VIEW_WHEN_CONTIGUOUS, MemoryRules
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import fail
from topos.tensor import Shape


def _infer_permute(operand: Shape, axes: tuple[int, ...]) -> Shape:
    if sorted(axes) != list(range(operand.rank)):
        raise fail("permute", f"axes {list(axes)} are not a permutation of shape {operand}")
    return Shape(operand[axis] for axis in axes)


def _permuted_layout(operand_layouts, operand_shapes, output, attributes):
    """A view of the operand's memory with its axes reordered (strided when the operand is)."""
    first = operand_layouts[0]
    if first is None:
        return None
    axes = list(attributes["axes"])
    return tuple(axes.index(axis) for axis in first)


def _derive_permute(algebra, inputs, output, gradient, needs, axes):
    inverse = [0] * len(axes)
    for position, axis in enumerate(axes):
        inverse[axis] = position
    return (algebra.permute(gradient, axes=tuple(inverse)),)


@primitive(
    "permute",
    1,
    _infer_permute,
    _derive_permute,
    memory=MemoryRules(view=VIEW_ALWAYS, layout=_permuted_layout),
)
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
    return (algebra.reshape(gradient, shape=tuple(algebra.shape(inputs[0]))),)


@primitive(
    "reshape", 1, _infer_reshape, _derive_reshape, memory=MemoryRules(view=VIEW_WHEN_CONTIGUOUS)
)
def reshape(operand, out=None, shape=()):
    """The elements in row-major order under another shape: a view of a C-contiguous
    operand, else a copy (so whether it is a view follows from the layout alone)."""
    if out is None:
        if not operand.flags.c_contiguous:
            operand = np.ascontiguousarray(operand)
        return np.reshape(operand, shape)
    if out.flags.c_contiguous:
        # One copy: the slot seen under the operand's shape takes the elements in order.
        np.copyto(out.reshape(operand.shape), operand)
    else:
        np.copyto(out, np.reshape(operand, shape))
    return out


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "permute",
    Example("permute", normal((2, 3, 4)), on_parameters(lambda a: a.permute(2, 0, 1))),
    Example("transpose", normal((3, 4)), on_parameters(lambda a: a.T)),
)

declare_examples(
    "reshape",
    Example("reshape", normal((2, 3, 4)), on_parameters(lambda a: a.reshape(4, 6))),
)

# Emission: how each is written in PyTorch and JAX (see topos.ops.emission) ------------

declare_emission("permute", lambda xp, x, axes=(): xp.permute(x, axes))
declare_emission("reshape", lambda xp, x, shape=(): xp.reshape(x, tuple(shape)))

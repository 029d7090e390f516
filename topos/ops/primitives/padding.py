"""pad and narrow: zeros around an operand, and a slice of one axis; each the other's adjoint."""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters
from topos.ops.memory_rules import VIEW_ALWAYS, MemoryRules
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import check_axis, fail
from topos.tensor import Shape


def _infer_pad(operand: Shape, widths: tuple[tuple[int, int], ...]) -> Shape:
    if len(widths) != operand.rank:
        raise fail("pad", f"{len(widths)} (before, after) pairs for shape {operand}")
    if any(before < 0 or after < 0 for before, after in widths):
        raise fail("pad", f"widths {list(widths)} include a negative width")
    return Shape(extent + before + after for extent, (before, after) in zip(operand, widths))


def _derive_pad(algebra, inputs, output, gradient, needs, widths):
    shape = algebra.shape(inputs[0])
    result = gradient
    for axis, (before, _after) in enumerate(widths):
        if before or _after:
            result = algebra.narrow(result, axis=axis, start=before, length=shape[axis])
    return (result,)


def _specialize_pad(shapes, attributes):
    """The plan's form of `pad` for an operand of a given shape: the kernel's zeros and
    copy, with the padded shape and the interior's slices worked out once (a narrow's
    adjoint in a recurrent cell's gradient: a dozen a step, each 2 us, half of it the
    kernel's Python)."""
    widths = attributes.get("widths", ())
    extents = tuple(shapes[0])
    shape = tuple(extent + before + after for extent, (before, after) in zip(extents, widths))
    interior = tuple(slice(before, before + extent) for extent, (before, _) in zip(extents, widths))
    zeros = np.zeros

    def pad_into(operand, out=None, widths=widths):
        if out is None:
            out = zeros(shape, dtype=operand.dtype)
        else:
            out.fill(0)
        out[interior] = operand
        return out

    return pad_into


@primitive("pad", 1, _infer_pad, _derive_pad, specialize=_specialize_pad)
def pad(operand, out=None, widths=()):
    """Surrounds each axis with (before, after) zeros."""
    shape = tuple(extent + before + after for extent, (before, after) in zip(operand.shape, widths))
    if out is None:
        out = np.zeros(shape, dtype=operand.dtype)
    else:
        out.fill(0)
    interior = tuple(
        slice(before, before + extent) for extent, (before, _) in zip(operand.shape, widths)
    )
    out[interior] = operand
    return out


def _infer_narrow(operand: Shape, axis: int, start: int, length: int) -> Shape:
    check_axis("narrow", operand, axis)
    if start < 0 or length < 0 or start + length > operand[axis]:
        raise fail(
            "narrow",
            f"slice {start}:{start + length} of axis {axis} is outside shape {operand}",
        )
    extents = list(operand)
    extents[axis] = length
    return Shape(extents)


def _derive_narrow(algebra, inputs, output, gradient, needs, axis, start, length):
    shape = algebra.shape(inputs[0])
    widths = tuple(
        (start, shape[axis] - start - length) if position == axis else (0, 0)
        for position in range(shape.rank)
    )
    return (algebra.pad(gradient, widths=widths),)


@primitive("narrow", 1, _infer_narrow, _derive_narrow, memory=MemoryRules(view=VIEW_ALWAYS))
def narrow(operand, out=None, axis=0, start=0, length=0):
    """The slice `start:start+length` along one axis (a view)."""
    view = operand[(slice(None),) * axis + (slice(start, start + length),)]
    if out is None:
        return view
    np.copyto(out, view)
    return out


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "pad",
    Example("pad", normal((2, 3)), on_parameters(lambda a: a.pad(((1, 0), (0, 2))))),
)

declare_examples(
    "narrow",
    Example("narrow", normal((3, 5)), on_parameters(lambda a: a.narrow(1, 1, 3))),
)

# Emission: how each is written in PyTorch and JAX (see topos.ops.emission) ------------

declare_emission("pad", lambda xp, x, widths=(): xp.pad(x, widths))
declare_emission(
    "narrow", lambda xp, x, axis=0, start=0, length=0: xp.narrow(x, axis, start, length)
)

"""concat: two operands joined along one axis (PyTorch's `cat` of two); its adjoint is
the two `narrow`s that cut the gradient apart again.

Binary on purpose: a primitive has a fixed arity, and a transformer joins two halves
(rotary's `rotate_half`, a cache and its new entries). `topos.nn.concat` joins any
number by folding this over them.
"""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters, record
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import check_axis, fail, replace_axis
from topos.tensor import Shape


def _infer_concat(first: Shape, second: Shape, axis: int) -> Shape:
    check_axis("concat", first, axis)
    if first.rank != second.rank or any(
        a != b for position, (a, b) in enumerate(zip(first, second)) if position != axis
    ):
        raise fail("concat", f"shapes {first} and {second} differ off axis {axis}")
    return replace_axis(first, axis, first[axis] + second[axis])


def _derive_concat(algebra, inputs, output, gradient, needs, axis):
    first, second = (algebra.shape(operand)[axis] for operand in inputs)
    return (
        algebra.narrow(gradient, axis=axis, start=0, length=first) if needs[0] else None,
        algebra.narrow(gradient, axis=axis, start=first, length=second) if needs[1] else None,
    )


def _specialize_concat(shapes, attributes):
    """The plan's form of `concat` for operands of given shapes: the kernel's two copies,
    with the joined shape and the halves' slices worked out once (a gradient of gates
    cut from one product is joined by these, dozens a recurrent step)."""
    axis = attributes.get("axis", 0)
    first, second = tuple(shapes[0]), tuple(shapes[1])
    shape = (*first[:axis], first[axis] + second[axis], *first[axis + 1 :])
    lead = (slice(None),) * axis
    head, tail = (*lead, slice(0, first[axis])), (*lead, slice(first[axis], None))
    empty = np.empty

    def concat_into(first, second, out=None, axis=axis):
        if out is None:
            out = empty(shape, dtype=first.dtype)
        out[head] = first
        out[tail] = second
        return out

    return concat_into


@primitive("concat", 2, _infer_concat, _derive_concat, specialize=_specialize_concat)
def concat(first, second, out=None, axis=0):
    """`first` then `second` along `axis` (a copy of each)."""
    if out is None:
        shape = list(first.shape)
        shape[axis] += second.shape[axis]
        out = np.empty(shape, dtype=first.dtype)
    lead = (slice(None),) * axis
    out[(*lead, slice(0, first.shape[axis]))] = first
    out[(*lead, slice(first.shape[axis], None))] = second
    return out


declare_examples(
    "concat",
    Example(
        "concat",
        normal((2, 3), (2, 4)),
        on_parameters(lambda a, b: record("concat", a, b, axis=1)),
    ),
    Example(
        "concat_leading",
        normal((1, 2, 3), (2, 2, 3)),
        on_parameters(lambda a, b: record("concat", a, b, axis=0)),
    ),
)

# Emission: how it is written in PyTorch and JAX (see topos.ops.emission) --------------

declare_emission("concat", lambda xp, a, b, axis=0: xp.concat([a, b], axis))

"""pick_class and place_class: the entry of each row at its class index, and its adjoint,
the entries placed back into rows of zeros (class-index cross-entropy records them)."""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_indices, record
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import fail
from topos.tensor import Shape


def _infer_pick_class(values: Shape, indices: Shape) -> Shape:
    if values.rank != indices.rank + 1 or tuple(values)[:-1] != tuple(indices):
        raise fail(
            "pick_class",
            f"values {values} must be the indices' shape {indices} and a class axis",
        )
    return indices


def _derive_pick_class(algebra, inputs, output, gradient, needs):
    values, indices = inputs
    classes = algebra.shape(values)[-1]
    return (algebra.place_class(gradient, indices, classes=classes), None)


@primitive("pick_class", 2, _infer_pick_class, _derive_pick_class, index_operands=(1,))
def pick_class(values, indices, out=None):
    """`values[..., indices[...]]`: each row's entry at its class index."""
    picked = np.take_along_axis(values, indices[..., None], axis=-1)[..., 0]
    if out is None:
        return picked
    np.copyto(out, picked)
    return out


def _infer_place_class(values: Shape, indices: Shape, classes: int) -> Shape:
    if values != indices:
        raise fail("place_class", f"values {values} must have the indices' shape {indices}")
    if classes < 1:
        raise fail("place_class", f"{classes} classes")
    return Shape((*indices, classes))


def _derive_place_class(algebra, inputs, output, gradient, needs, classes):
    _, indices = inputs
    return (algebra.pick_class(gradient, indices), None)


@primitive("place_class", 2, _infer_place_class, _derive_place_class, index_operands=(1,))
def place_class(values, indices, out=None, classes=1):
    """Rows of `classes` zeros holding each value at its class index."""
    if out is None:
        out = np.zeros((*values.shape, classes), dtype=values.dtype)
    else:
        out.fill(0)
    np.put_along_axis(out, indices[..., None], values[..., None], axis=-1)
    return out


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "pick_class",
    Example(
        "pick_class",
        normal((2, 4, 5)),
        on_indices(lambda targets, logits: record("pick_class", logits, targets)),
    ),
)

declare_examples(
    "place_class",
    Example(
        "place_class",
        normal((2, 4)),
        on_indices(lambda targets, values: record("place_class", values, targets, classes=5)),
    ),
)

# Emission: how each is written in PyTorch and JAX (see topos.ops.emission) ------------


def _emit_pick_class(xp, values, indices):
    return xp.take_along(values, xp.indices(indices)[..., None], -1)[..., 0]


def _emit_place_class(xp, values, indices, classes=1):
    numbers = xp.constant(np.arange(classes, dtype=np.int64))
    chosen = xp.as_float(xp.indices(indices)[..., None] == numbers)
    return chosen * values[..., None]


declare_emission("pick_class", _emit_pick_class)
declare_emission("place_class", _emit_place_class)

"""row_scale, standardize and standardize_gradient: layer normalisation before its weight
and bias, as `standardize(x, row_scale(x))`, and the gradient sent back through it.

`row_scale(x)` is each row's `1 / sqrt(variance + eps)` along the last axis (`[..., 1]`;
the biased variance, divided by the row's length, as PyTorch's layer norm, from the
centred rows, so a large mean costs no precision); `standardize(x, s)` is `(x - mean) * s`.
The pair's gradient depends on x only through the standardised rows and their scales:
`s (g - mean(g) - x̂ mean(g x̂))`. So standardize's rule sends it all to x, from its own
output and the scales, and sends the scales nothing (they follow from x, as im2col's
patches follow from the images): a forward plan frees x as soon as the forward pass has
read it, and the backward pass recomputes nothing.

Fused because the composed form (mean, subtract, square, mean, add, sqrt, divide, and
every rule of them) passes over the activations some thirty times a layer, forward and
back; these pass over them a handful. Rows are summed by `row_sums`; scratch goes in
a workspace, so a planned step allocates nothing.
"""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, both, normal, on_parameters, positive, record
from topos.ops.memory_order import contiguous
from topos.ops.memory_rules import MemoryRules
from topos.ops.primitive import declare_examples, primitive
from topos.ops.row_sums import row_sums
from topos.ops.shape_rules import fail
from topos.tensor import Shape


def _rows_of(operation: str, operand: Shape) -> None:
    if operand.rank < 1 or operand[-1] == 0:
        raise fail(operation, f"shape {operand} has no last axis to standardise")


def _scale_shape(operand: Shape) -> Shape:
    return Shape((*tuple(operand)[:-1], 1))


def _row_mean(algebra, value, shape: Shape):
    """`value`'s mean along the last axis, kept as an axis of 1 (`[..., 1]`)."""
    axis = shape.rank - 1
    total = algebra.sum(value, axis=axis)
    mean = algebra.div(total, algebra.constant(float(shape[-1]), Shape(())))
    return algebra.reshape(mean, shape=tuple(_scale_shape(shape)))


def _centre(operand: np.ndarray, out: np.ndarray) -> np.ndarray:
    """`operand` minus its row means, into `out`."""
    mean = row_sums(operand)
    mean /= operand.dtype.type(operand.shape[-1])
    return np.subtract(operand, mean, out=out)


def _one_scratch(operand: Shape, *others, **attributes) -> int:
    return operand.volume


# row_scale ----------------------------------------------------------------------------


def _infer_row_scale(operand: Shape, eps: float) -> Shape:
    _rows_of("row_scale", operand)
    if eps < 0:
        raise fail("row_scale", f"eps {eps} is negative")
    return _scale_shape(operand)


def _derive_row_scale(algebra, inputs, output, gradient, needs, eps):
    # s = (v + eps)^(-1/2), v = mean(xc^2): ds/dx = -s^3 xc / n (xc sums to zero per row,
    # so the centring's own derivative drops out).
    (operand,) = inputs
    shape = algebra.shape(operand)
    centred = algebra.sub(operand, _row_mean(algebra, operand, shape))
    cube = algebra.mul(output, algebra.mul(output, output))
    factor = algebra.div(
        algebra.mul(gradient, cube), algebra.constant(-float(shape[-1]), Shape(()))
    )
    return (algebra.mul(centred, factor),)


@primitive(
    "row_scale", 1, _infer_row_scale, _derive_row_scale, memory=MemoryRules(workspace=_one_scratch)
)
def row_scale(operand, out=None, eps=1e-5, workspace=None):
    """`1 / sqrt(mean((x - mean(x))^2) + eps)` of each row along the last axis, `[..., 1]`."""
    operand = np.ascontiguousarray(operand)
    centred = _scratch(workspace, operand)
    _centre(operand, centred)
    np.multiply(centred, centred, out=centred)
    variance = row_sums(centred)
    variance /= operand.dtype.type(operand.shape[-1])
    variance += operand.dtype.type(eps)
    np.sqrt(variance, out=variance)
    if out is None:
        out = np.empty(variance.shape, dtype=operand.dtype)
    return np.divide(operand.dtype.type(1), variance, out=out)


def _scratch(workspace, like: np.ndarray) -> np.ndarray:
    """A scratch array of `like`'s shape: in the workspace when given."""
    if workspace is not None and workspace.size >= like.size:
        return workspace[: like.size].reshape(like.shape)
    return np.empty(like.shape, dtype=like.dtype)


# standardize ----------------------------------------------------------------------------


def _infer_standardize(operand: Shape, scale: Shape) -> Shape:
    _rows_of("standardize", operand)
    if scale != _scale_shape(operand):
        raise fail(
            "standardize", f"scales {scale} for rows {operand}: need {_scale_shape(operand)}"
        )
    return operand


def _derive_standardize(algebra, inputs, output, gradient, needs):
    # The whole gradient of standardize(x, row_scale(x)) goes to x; the scales, which
    # follow from x, get nothing of their own (see the module).
    _, scale = inputs
    return (algebra.standardize_gradient(output, gradient, scale), None)


@primitive("standardize", 2, _infer_standardize, _derive_standardize)
def standardize(operand, scale, out=None):
    """`(x - mean(x)) * scale` of each row along the last axis."""
    operand = np.ascontiguousarray(operand)
    if out is None:
        out = np.empty(operand.shape, dtype=operand.dtype)
    _centre(operand, out)
    return np.multiply(out, scale, out=out)


# standardize_gradient -------------------------------------------------------------------


def _infer_standardize_gradient(normalised: Shape, gradient: Shape, scale: Shape) -> Shape:
    if normalised != gradient or scale != _scale_shape(normalised):
        raise fail(
            "standardize_gradient",
            f"rows {normalised}, gradient {gradient} and scales {scale} do not match",
        )
    return normalised


def _derive_standardize_gradient(algebra, inputs, output, gradient, needs):
    # y = s (g - mean(g) - x̂ a), a = mean(g x̂). For the incoming h: in g, the same map
    # (it is symmetric); in x̂, -s (a h + mean(h x̂) g); in s, sum(h y) / s per row.
    normalised, incoming, scale = inputs
    shape = algebra.shape(normalised)
    parts = [None, None, None]
    if needs[0]:
        along = _row_mean(algebra, algebra.mul(incoming, normalised), shape)
        across = _row_mean(algebra, algebra.mul(gradient, normalised), shape)
        both = algebra.add(algebra.mul(along, gradient), algebra.mul(across, incoming))
        parts[0] = algebra.neg(algebra.mul(scale, both))
    if needs[1]:
        parts[1] = algebra.standardize_gradient(normalised, gradient, scale)
    if needs[2]:
        total = _row_mean(algebra, algebra.mul(gradient, output), shape)
        count = algebra.constant(float(shape[-1]), Shape(()))
        parts[2] = algebra.div(algebra.mul(total, count), scale)
    return tuple(parts)


@primitive(
    "standardize_gradient",
    3,
    _infer_standardize_gradient,
    _derive_standardize_gradient,
    memory=MemoryRules(workspace=_one_scratch, layout=contiguous),
)
def standardize_gradient(normalised, gradient, scale, out=None, workspace=None):
    """The gradient of `x` through `standardize(x, row_scale(x))`, from the standardised
    rows x̂, the gradient g of the output and the scales s: `s (g - mean(g) - x̂ mean(g x̂))`."""
    normalised = np.ascontiguousarray(normalised)
    gradient = np.ascontiguousarray(gradient)
    if out is None:
        out = np.empty(gradient.shape, dtype=gradient.dtype)
    count = gradient.dtype.type(gradient.shape[-1])
    product = _scratch(workspace, gradient)
    np.multiply(gradient, normalised, out=product)
    along = row_sums(product)
    along /= count
    mean = row_sums(gradient)
    mean /= count
    np.subtract(gradient, mean, out=out)
    np.multiply(normalised, along, out=product)
    np.subtract(out, product, out=out)
    return np.multiply(out, scale, out=out)


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "row_scale",
    Example("row_scale", normal((3, 5)), on_parameters(lambda a: record("row_scale", a, eps=1e-5))),
    Example(
        "row_scale_rank3",
        normal((2, 3, 4)),
        on_parameters(lambda a: record("row_scale", a, eps=0.1)),
    ),
)

declare_examples(
    "standardize",
    Example(
        "standardize",
        normal((3, 5)),
        on_parameters(lambda a: record("standardize", a, record("row_scale", a, eps=1e-5))),
    ),
    Example(
        "standardize_rank3",
        normal((2, 3, 4)),
        on_parameters(lambda a: record("standardize", a, record("row_scale", a, eps=0.1))),
    ),
)

declare_examples(
    "standardize_gradient",
    Example(
        "standardize_gradient",
        both(normal((3, 5), (3, 5)), positive((3, 1))),
        on_parameters(lambda x, g, s: record("standardize_gradient", x, g, s)),
    ),
)

# Emission: the composed form; the peer differentiates it -----------------------------


def _row_mean_of(xp, x):
    return xp.sum(x, axis=-1, keepdims=True) / x.shape[-1]


def _emit_row_scale(xp, x, eps=1e-5):
    centred = x - _row_mean_of(xp, x)
    return 1.0 / xp.sqrt(_row_mean_of(xp, centred * centred) + eps)


def _emit_standardize_gradient(xp, normalised, gradient, scale):
    mean = _row_mean_of(xp, gradient)
    return scale * (gradient - mean - normalised * _row_mean_of(xp, gradient * normalised))


declare_emission("row_scale", _emit_row_scale)
declare_emission("standardize", lambda xp, x, scale: (x - _row_mean_of(xp, x)) * scale)
declare_emission("standardize_gradient", _emit_standardize_gradient)

"""rms_norm, rms_norm_gradient and rms_norm_weight_gradient: root-mean-square layer
normalisation along the last axis with a weight (PyTorch's `RMSNorm`, Llama's norm),
and the gradients sent back through it to the rows and to the weight.

    r = 1 / sqrt(mean(x^2) + eps)   per row, [..., 1]
    y = x r w                       w: [n], the last axis

For the gradient g of y, with u = g w and x̂ = x r:

    dx = r (u - x̂ mean(u x̂))       (rms_norm_gradient)
    dw = sum over rows of g x̂       (rms_norm_weight_gradient)

Fused because the composed form (square, mean, add, rsqrt, two products, and every
rule of them) is eight nodes a norm, each a pass over the activations, that remat then
recomputes; these are one pass forward and two back. Each recomputes r from x (one
row sum) rather than keeping it, so a norm keeps nothing but its input.
"""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, both, normal, on_parameters, positive, record
from topos.ops.memory_rules import MemoryRules
from topos.ops.primitive import declare_examples, primitive
from topos.ops.primitives.reduction import reduce_to
from topos.ops.row_sums import column_sums, row_sums
from topos.ops.shape_rules import fail
from topos.tensor import Shape


def _rows_of(operation: str, operand: Shape, eps: float) -> None:
    if operand.rank < 1 or operand[-1] == 0:
        raise fail(operation, f"shape {operand} has no last axis to normalise")
    if eps < 0:
        raise fail(operation, f"eps {eps} is negative")


def _weight_of(operation: str, operand: Shape, weight: Shape) -> None:
    if weight != Shape((operand[-1],)):
        raise fail(operation, f"weight {weight} for rows {operand}: need [{operand[-1]}]")


def _scales(operand: np.ndarray, scratch: np.ndarray, eps: float) -> np.ndarray:
    """`1 / sqrt(mean(x^2) + eps)` of each row, `[..., 1]` (fresh and small); `scratch`
    (x's shape) is overwritten."""
    kind = operand.dtype.type
    np.multiply(operand, operand, out=scratch)
    scale = row_sums(scratch)
    scale /= kind(operand.shape[-1])
    scale += kind(eps)
    np.sqrt(scale, out=scale)
    return np.divide(kind(1), scale, out=scale)


def _scratch(workspace, like: np.ndarray) -> np.ndarray:
    """A scratch array of `like`'s shape: in the workspace when given."""
    if workspace is not None and workspace.size >= like.size:
        return workspace[: like.size].reshape(like.shape)
    return np.empty(like.shape, dtype=like.dtype)


def _one_scratch(operand: Shape, *others, **attributes) -> int:
    return operand.volume


# rms_norm -------------------------------------------------------------------------------


def _infer_rms_norm(operand: Shape, weight: Shape, eps: float) -> Shape:
    _rows_of("rms_norm", operand, eps)
    _weight_of("rms_norm", operand, weight)
    return operand


def _derive_rms_norm(algebra, inputs, output, gradient, needs, eps):
    operand, weight = inputs
    return (
        algebra.rms_norm_gradient(operand, weight, gradient, eps=eps) if needs[0] else None,
        algebra.rms_norm_weight_gradient(operand, gradient, eps=eps) if needs[1] else None,
    )


@primitive("rms_norm", 2, _infer_rms_norm, _derive_rms_norm)
def rms_norm(operand, weight, out=None, eps=1e-6):
    """`x / sqrt(mean(x^2) + eps) * w` of each row along the last axis."""
    operand = np.ascontiguousarray(operand)
    if out is None:
        out = np.empty(operand.shape, dtype=operand.dtype)
    scale = _scales(operand, out, eps)  # out serves as the squares' scratch first
    np.multiply(operand, scale, out=out)
    return np.multiply(out, weight, out=out)


# rms_norm_gradient ----------------------------------------------------------------------


def _infer_rms_norm_gradient(operand: Shape, weight: Shape, gradient: Shape, eps: float) -> Shape:
    _rows_of("rms_norm_gradient", operand, eps)
    _weight_of("rms_norm_gradient", operand, weight)
    if gradient != operand:
        raise fail("rms_norm_gradient", f"rows {operand} and gradient {gradient} differ in shape")
    return operand


def _row_mean(algebra, value, shape: Shape):
    """`value`'s mean along the last axis, kept as an axis of 1 (`[..., 1]`)."""
    axis = shape.rank - 1
    total = algebra.sum(value, axis=axis)
    mean = algebra.div(total, algebra.constant(float(shape[-1]), Shape(())))
    return algebra.reshape(mean, shape=(*tuple(shape)[:-1], 1))


def _derive_rms_norm_gradient(algebra, inputs, output, gradient, needs, eps):
    # y = r u - r^3 x s with u = g w, s = mean(u x). P(z) = r (z - x̂ mean(z x̂)) is
    # symmetric, and y = P(u): for the incoming h, u receives P(h), so g receives w P(h)
    # and w the row sums of g P(h). In x: r^3 (x (3 r^2 s q - p) - u q - s h), with
    # p = mean(h u) and q = mean(h x).
    operand, weight, incoming = inputs
    shape = algebra.shape(operand)
    parts = [None, None, None]
    if needs[1] or needs[2]:
        ones = algebra.constant(1.0, algebra.shape(weight))
        projected = algebra.rms_norm_gradient(operand, ones, gradient, eps=eps)
        if needs[1]:
            parts[1] = reduce_to(algebra, algebra.mul(incoming, projected), algebra.shape(weight))
        if needs[2]:
            parts[2] = algebra.mul(projected, weight)
    if needs[0]:
        square = _row_mean(algebra, algebra.mul(operand, operand), shape)
        scale = algebra.rsqrt(algebra.add(square, algebra.constant(float(eps), Shape(()))))
        scale_squared = algebra.mul(scale, scale)
        cube = algebra.mul(scale_squared, scale)
        weighted = algebra.mul(incoming, weight)
        s = _row_mean(algebra, algebra.mul(weighted, operand), shape)
        p = _row_mean(algebra, algebra.mul(gradient, weighted), shape)
        q = _row_mean(algebra, algebra.mul(gradient, operand), shape)
        three = algebra.constant(3.0, Shape(()))
        along = algebra.sub(algebra.mul(three, algebra.mul(scale_squared, algebra.mul(s, q))), p)
        total = algebra.sub(algebra.mul(operand, along), algebra.mul(weighted, q))
        total = algebra.sub(total, algebra.mul(gradient, s))
        parts[0] = algebra.mul(total, cube)
    return tuple(parts)


@primitive(
    "rms_norm_gradient",
    3,
    _infer_rms_norm_gradient,
    _derive_rms_norm_gradient,
    memory=MemoryRules(workspace=_one_scratch),
)
def rms_norm_gradient(operand, weight, gradient, out=None, eps=1e-6, workspace=None):
    """The gradient of `x` through `rms_norm(x, w)`, from x, w and the output's gradient
    g: `r (u - x̂ mean(u x̂))` with `u = g w`, `x̂ = x r`; one scratch."""
    operand = np.ascontiguousarray(operand)
    gradient = np.ascontiguousarray(gradient)
    kind = operand.dtype.type
    if out is None:
        out = np.empty(operand.shape, dtype=operand.dtype)
    scale = _scales(operand, out, eps)
    weighted = _scratch(workspace, operand)
    np.multiply(gradient, weight, out=weighted)
    np.multiply(weighted, operand, out=out)
    # r^3 mean(u x) = r mean(u x̂), per row
    factor = row_sums(out)
    factor /= kind(operand.shape[-1])
    factor *= scale
    factor *= scale
    factor *= scale
    np.multiply(operand, factor, out=out)
    np.multiply(weighted, scale, out=weighted)
    return np.subtract(weighted, out, out=out)


# rms_norm_weight_gradient ---------------------------------------------------------------


def _infer_rms_norm_weight_gradient(operand: Shape, gradient: Shape, eps: float) -> Shape:
    _rows_of("rms_norm_weight_gradient", operand, eps)
    if gradient != operand:
        raise fail(
            "rms_norm_weight_gradient", f"rows {operand} and gradient {gradient} differ in shape"
        )
    return Shape((operand[-1],))


def _derive_rms_norm_weight_gradient(algebra, inputs, output, gradient, needs, eps):
    # y = sum_rows(g x̂): for the incoming h ([n]), g receives x̂ h = rms_norm(x, h), and
    # x receives P(h g) = rms_norm_gradient(x, h, g) (the weight's role played by h).
    operand, incoming = inputs
    return (
        algebra.rms_norm_gradient(operand, gradient, incoming, eps=eps) if needs[0] else None,
        algebra.rms_norm(operand, gradient, eps=eps) if needs[1] else None,
    )


@primitive(
    "rms_norm_weight_gradient",
    2,
    _infer_rms_norm_weight_gradient,
    _derive_rms_norm_weight_gradient,
    memory=MemoryRules(workspace=_one_scratch),
)
def rms_norm_weight_gradient(operand, gradient, out=None, eps=1e-6, workspace=None):
    """The gradient of `w` through `rms_norm(x, w)`: the sums over every row of `g x̂`
    (`[n]`, one product with a vector of ones, as `sum_to` sums a bias's gradient)."""
    operand = np.ascontiguousarray(operand)
    gradient = np.ascontiguousarray(gradient)
    product = _scratch(workspace, operand)
    scale = _scales(operand, product, eps)
    np.multiply(operand, scale, out=product)
    np.multiply(product, gradient, out=product)
    sums = column_sums(product.reshape(-1, operand.shape[-1]))
    if out is None:
        return sums
    np.copyto(out, sums)
    return out


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "rms_norm",
    Example(
        "rms_norm",
        both(normal((3, 5)), positive((5,))),
        on_parameters(lambda x, w: record("rms_norm", x, w, eps=1e-6)),
    ),
    Example(
        "rms_norm_rank3",
        both(normal((2, 3, 4)), positive((4,))),
        on_parameters(lambda x, w: record("rms_norm", x, w, eps=0.1)),
    ),
)

declare_examples(
    "rms_norm_gradient",
    Example(
        "rms_norm_gradient",
        both(normal((3, 5)), both(positive((5,)), normal((3, 5)))),
        on_parameters(lambda x, w, g: record("rms_norm_gradient", x, w, g, eps=0.01)),
    ),
)

declare_examples(
    "rms_norm_weight_gradient",
    Example(
        "rms_norm_weight_gradient",
        normal((2, 3, 5), (2, 3, 5)),
        on_parameters(lambda x, g: record("rms_norm_weight_gradient", x, g, eps=0.01)),
    ),
)

# Emission: the composed form; the gradients as their formulas ------------------------


def _emit_scale(xp, x, eps):
    return 1.0 / xp.sqrt(xp.sum(x * x, axis=-1, keepdims=True) / x.shape[-1] + eps)


def _emit_rms_norm_gradient(xp, x, weight, gradient, eps=1e-6):
    scale = _emit_scale(xp, x, eps)
    normalised, pushed = x * scale, gradient * weight
    mean = xp.sum(pushed * normalised, axis=-1, keepdims=True) / x.shape[-1]
    return scale * (pushed - normalised * mean)


declare_emission("rms_norm", lambda xp, x, weight, eps=1e-6: x * _emit_scale(xp, x, eps) * weight)
declare_emission("rms_norm_gradient", _emit_rms_norm_gradient)
declare_emission(
    "rms_norm_weight_gradient",
    lambda xp, x, gradient, eps=1e-6: xp.sum_to(
        gradient * (x * _emit_scale(xp, x, eps)), (x.shape[-1],)
    ),
)

"""standardize and standardize_gradient: each row along the last axis shifted to mean 0
and scaled to variance 1 (layer normalisation before its weight and bias), and the
gradient sent back through it.

Fused because the composed form (mean, subtract, square, mean, add, sqrt, divide, and
every rule of them) passes over the activations some thirty times a layer, forward and
back; these pass over them a handful. The variance is the biased one (divided by the
row's length, as PyTorch's layer norm), computed from the centred rows (two passes),
so a large mean costs no precision. Rows are summed by `row_sums`; scratch goes in a
workspace, so a planned step allocates nothing.
"""

from __future__ import annotations

import numpy as np

from topos.ops.memory_order import contiguous
from topos.ops.primitive import primitive
from topos.ops.row_sums import row_sums
from topos.ops.shape_rules import fail
from topos.tensor import Shape


def _infer_standardize(operand: Shape, eps: float) -> Shape:
    if operand.rank < 1 or operand[-1] == 0:
        raise fail("standardize", f"shape {operand} has no last axis to standardise")
    if eps < 0:
        raise fail("standardize", f"eps {eps} is negative")
    return operand


def _scales(centred: np.ndarray, eps: float, square: np.ndarray) -> np.ndarray:
    """`1 / sqrt(mean(centred ** 2) + eps)` per row, `[..., 1]` (`square` is scratch)."""
    np.multiply(centred, centred, out=square)
    variance = row_sums(square)
    count = centred.dtype.type(centred.shape[-1])
    variance /= count
    variance += centred.dtype.type(eps)
    np.sqrt(variance, out=variance)
    return np.divide(centred.dtype.type(1), variance, out=variance)


def _centre(operand: np.ndarray, out: np.ndarray) -> np.ndarray:
    """`operand` minus its row means, into `out`."""
    count = operand.dtype.type(operand.shape[-1])
    mean = row_sums(operand)
    mean /= count
    return np.subtract(operand, mean, out=out)


def _derive_standardize(algebra, inputs, output, gradient, needs, eps):
    return (algebra.standardize_gradient(inputs[0], gradient, eps=eps),)


def _one_scratch(operand: Shape, eps: float) -> int:
    return operand.volume


@primitive("standardize", 1, _infer_standardize, _derive_standardize, workspace=_one_scratch)
def standardize(operand, out=None, eps=1e-5, workspace=None):
    """`(x - mean) / sqrt(variance + eps)` along the last axis."""
    operand = np.ascontiguousarray(operand)
    if out is None:
        out = np.empty(operand.shape, dtype=operand.dtype)
    square = _scratch(workspace, operand, 0)
    _centre(operand, out)
    scale = _scales(out, eps, square)
    np.multiply(out, scale, out=out)
    return out


def _scratch(workspace, like: np.ndarray, position: int) -> np.ndarray:
    """The `position`-th scratch array of `like`'s shape: in the workspace when given."""
    size = like.size
    if workspace is not None and workspace.size >= (position + 1) * size:
        return workspace[position * size : (position + 1) * size].reshape(like.shape)
    return np.empty(like.shape, dtype=like.dtype)


def _infer_standardize_gradient(operand: Shape, gradient: Shape, eps: float) -> Shape:
    if operand != gradient:
        raise fail(
            "standardize_gradient", f"operand {operand} and gradient {gradient} differ in shape"
        )
    return _infer_standardize(operand, eps)


def _row_mean(algebra, value, shape: Shape):
    """`value`'s mean along the last axis, spread back over it."""
    axis = shape.rank - 1
    total = algebra.sum_along(value, axis=axis)
    mean = algebra.div(total, algebra.constant(float(shape[-1]), Shape(())))
    return algebra.broadcast_along(mean, axis=axis, size=shape[-1])


def _derive_standardize_gradient(algebra, inputs, output, gradient, needs, eps):
    # y = s (g - mean(g) - x̂ mean(g x̂)) with x̂ = s xc, xc = x - mean(x), s = 1/sqrt(v + eps),
    # v = mean(xc^2). In g it is standardize's own Jacobian, which is symmetric. In x,
    # for the incoming h, with c = mean(g xc), e = mean(h xc), K = sum(h P(g)) and
    # P(u) = u - mean(u):  dL/dx = -(s^3 / n)(K - 3 n s^2 c e) xc - s^3 (e P(g) + c P(h)).
    operand, incoming = inputs
    shape = algebra.shape(operand)
    operand_part = incoming_part = None
    if needs[0]:
        count = float(shape[-1])

        def constant(value):
            return algebra.constant(value, Shape(()))

        centred = algebra.sub(operand, _row_mean(algebra, operand, shape))
        variance = _row_mean(algebra, algebra.mul(centred, centred), shape)
        scale = algebra.div(constant(1.0), algebra.sqrt(algebra.add(variance, constant(eps))))
        cube = algebra.mul(scale, algebra.mul(scale, scale))
        projected_incoming = algebra.sub(incoming, _row_mean(algebra, incoming, shape))
        projected_gradient = algebra.sub(gradient, _row_mean(algebra, gradient, shape))
        c = _row_mean(algebra, algebra.mul(incoming, centred), shape)
        e = _row_mean(algebra, algebra.mul(gradient, centred), shape)
        k = algebra.mul(
            _row_mean(algebra, algebra.mul(gradient, projected_incoming), shape), constant(count)
        )
        inner = algebra.sub(
            k,
            algebra.mul(
                constant(3.0 * count), algebra.mul(algebra.mul(scale, scale), algebra.mul(c, e))
            ),
        )
        first = algebra.mul(algebra.div(algebra.mul(cube, inner), constant(count)), centred)
        second = algebra.mul(
            cube,
            algebra.add(algebra.mul(e, projected_incoming), algebra.mul(c, projected_gradient)),
        )
        operand_part = algebra.neg(algebra.add(first, second))
    if needs[1]:
        incoming_part = algebra.standardize_gradient(operand, gradient, eps=eps)
    return operand_part, incoming_part


def _two_scratches(operand: Shape, gradient: Shape, eps: float) -> int:
    return 2 * operand.volume


@primitive(
    "standardize_gradient",
    2,
    _infer_standardize_gradient,
    _derive_standardize_gradient,
    workspace=_two_scratches,
    layout=contiguous,
)
def standardize_gradient(operand, gradient, out=None, eps=1e-5, workspace=None):
    """The gradient of `standardize(operand)` given the gradient of its output:
    `s (g - mean(g) - x̂ mean(g x̂))` along the last axis, x̂ and s recomputed from x."""
    operand = np.ascontiguousarray(operand)
    gradient = np.ascontiguousarray(gradient)
    if out is None:
        out = np.empty(operand.shape, dtype=operand.dtype)
    normalised = _scratch(workspace, operand, 0)
    square = _scratch(workspace, operand, 1)
    count = operand.dtype.type(operand.shape[-1])
    _centre(operand, normalised)
    scale = _scales(normalised, eps, square)
    np.multiply(normalised, scale, out=normalised)
    np.multiply(gradient, normalised, out=square)
    along = row_sums(square)
    along /= count
    mean = row_sums(gradient)
    mean /= count
    np.subtract(gradient, mean, out=out)
    np.multiply(normalised, along, out=normalised)
    np.subtract(out, normalised, out=out)
    np.multiply(out, scale, out=out)
    return out

"""softmax and softmax_gradient: probabilities along the last axis (optionally causal),
and the vector-Jacobian product that sends a gradient back through them.

One kernel each instead of the composed logsumexp, subtract, exp and their rules:
attention's scores are `batch x heads x T x T`, the largest buffers of a transformer,
and the composed form passes over them several times more, forward and back.
"""

from __future__ import annotations

import functools

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters, record, recorded
from topos.ops.primitive import declare_examples, primitive
from topos.ops.row_maxima import row_maxima
from topos.ops.row_sums import row_sums
from topos.ops.shape_rules import fail
from topos.tensor import Shape


@functools.cache
def causal_mask(size: int, dtype: np.dtype) -> np.ndarray:
    """`[size, size]`: 0 where column <= row, -inf above the diagonal (read-only)."""
    mask = np.where(np.tri(size, dtype=bool), 0.0, -np.inf).astype(dtype)
    mask.flags.writeable = False
    return mask


def _infer_softmax(operand: Shape, causal: bool) -> Shape:
    if operand.rank < 1 or operand[-1] == 0:
        raise fail("softmax", f"shape {operand} has no last axis to normalise")
    if causal and (operand.rank < 2 or operand[-1] != operand[-2]):
        raise fail("softmax", f"a causal softmax takes square [..., T, T] scores, not {operand}")
    return operand


def _derive_softmax(algebra, inputs, output, gradient, needs, causal):
    # From the probabilities alone, so a forward plan frees the scores at once. Masked
    # entries have probability 0, so the rule sends them nothing without knowing the mask.
    return (algebra.softmax_gradient(output, gradient),)


@primitive("softmax", 1, _infer_softmax, _derive_softmax)
def softmax(operand, out=None, causal=False):
    """`exp(x - max) / sum(exp(x - max))` along the last axis; with `causal`, entry
    `[..., i, j]` for `j > i` is left out (probability 0)."""
    if out is None:
        out = np.empty(operand.shape, dtype=operand.dtype)
    if causal:
        np.add(operand, causal_mask(operand.shape[-1], operand.dtype), out=out)
    else:
        np.copyto(out, operand)
    peak = row_maxima(out)
    np.subtract(out, peak, out=out)
    np.exp(out, out=out)
    total = row_sums(out)
    np.divide(out.dtype.type(1), total, out=total)
    np.multiply(out, total, out=out)
    return out


def _infer_softmax_gradient(probabilities: Shape, gradient: Shape) -> Shape:
    if probabilities != gradient:
        raise fail(
            "softmax_gradient",
            f"probabilities {probabilities} and gradient {gradient} differ in shape",
        )
    return probabilities


def _row_sums(algebra, value, shape: Shape):
    """`value` summed along the last axis and spread back over it."""
    axis = shape.rank - 1
    return algebra.broadcast(algebra.sum(value, axis=axis), axis=axis, size=shape[-1])


def _derive_softmax_gradient(algebra, inputs, output, gradient, needs):
    # z = y (g - <g, y>) per row. Its Jacobian in g is softmax's own, symmetric; in y,
    # dL/dy = h g - h <g, y> - g <h, y> for the incoming gradient h.
    probabilities, incoming = inputs
    shape = algebra.shape(probabilities)
    probability_part = incoming_part = None
    if needs[0]:
        along = algebra.mul(gradient, incoming)
        along = algebra.sub(
            along,
            algebra.mul(gradient, _row_sums(algebra, algebra.mul(incoming, probabilities), shape)),
        )
        probability_part = algebra.sub(
            along,
            algebra.mul(incoming, _row_sums(algebra, algebra.mul(gradient, probabilities), shape)),
        )
    if needs[1]:
        incoming_part = algebra.softmax_gradient(probabilities, gradient)
    return probability_part, incoming_part


@primitive("softmax_gradient", 2, _infer_softmax_gradient, _derive_softmax_gradient)
def softmax_gradient(probabilities, gradient, out=None):
    """`y * (g - sum(g * y))` along the last axis: the gradient of softmax's operand."""
    if out is None:
        out = np.empty(gradient.shape, dtype=gradient.dtype)
    np.multiply(gradient, probabilities, out=out)
    total = row_sums(out)
    np.subtract(gradient, total, out=out)
    np.multiply(out, probabilities, out=out)
    return out


def _probabilities(shape, causal: bool = False):
    """Softmax rows of normal scores (causal: zero above the diagonal), then normal values."""

    def draw(rng):
        scores = rng.standard_normal(shape)
        if causal:
            scores = np.where(np.tri(shape[-1], dtype=bool), scores, -np.inf)
        exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return [exponentials / exponentials.sum(axis=-1, keepdims=True), rng.standard_normal(shape)]

    return draw


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "softmax",
    Example(
        "softmax", normal((2, 3, 4)), on_parameters(lambda a: record("softmax", a, causal=False))
    ),
    Example(
        "softmax_causal",
        normal((2, 4, 4)),
        on_parameters(lambda a: record("softmax", a, causal=True)),
    ),
)

declare_examples(
    "softmax_gradient",
    Example("softmax_gradient", _probabilities((2, 3, 4)), recorded("softmax_gradient")),
    Example(
        "softmax_gradient_causal",
        _probabilities((2, 4, 4), causal=True),
        recorded("softmax_gradient"),
    ),
)

# Emission: how each is written in PyTorch and JAX (see topos.ops.emission) ------------


def _emit_softmax(xp, x, causal=False):
    if causal:
        x = x + xp.constant(causal_mask(x.shape[-1], np.dtype(xp.dtype)))
    shifted = xp.exp(x - xp.stop_gradient(xp.max(x, -1, keepdims=True)))
    return shifted / xp.sum(shifted, axis=-1, keepdims=True)


def _emit_softmax_gradient(xp, probabilities, gradient):
    return probabilities * (gradient - xp.sum(gradient * probabilities, axis=-1, keepdims=True))


declare_emission("softmax", _emit_softmax)
declare_emission("softmax_gradient", _emit_softmax_gradient)

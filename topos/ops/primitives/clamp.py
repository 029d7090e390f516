"""clamp and clamp_window: each element held within `[low, high]` (either bound may be
None), and the window's 0/1 mask its derivative multiplies by.

PyTorch's `clamp` with number bounds sends the gradient through strictly inside the
window, `low < x < high` (an element on a bound gets none: PyTorch 2's rule, measured);
so does the rule here, and the peers are emitted as a selection with that same mask,
not as their own clip (JAX's clip splits a tie's gradient in half).
"""

from __future__ import annotations

import numpy as np

from topos.ops.corner import Corner
from topos.ops.emission import declare_emission
from topos.ops.example import Example, on_parameters
from topos.ops.memory_rules import ELEMENTWISE
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import fail
from topos.tensor import Shape


def _infer_clamp(operand: Shape, low: float | None = None, high: float | None = None) -> Shape:
    if low is None and high is None:
        raise fail("clamp", "needs a low bound, a high bound or both")
    if low is not None and high is not None and low > high:
        raise fail("clamp", f"the low bound {low} is above the high bound {high}")
    return operand


def _derive_clamp(algebra, inputs, output, gradient, needs, low=None, high=None):
    window = algebra.clamp_window(inputs[0], low=low, high=high)
    return (algebra.mul(gradient, window),)


def _window_side(inputs, output, low=None, high=None):
    # Which of the three pieces each element lies on: below, inside, above.
    operand = inputs[0]
    below = np.zeros(operand.shape, bool) if low is None else operand < low
    above = np.zeros(operand.shape, bool) if high is None else operand > high
    return below.astype(np.int8) - above.astype(np.int8)


@primitive(
    "clamp",
    1,
    _infer_clamp,
    _derive_clamp,
    memory=ELEMENTWISE,
    corner=Corner(_window_side, "a clamp's bound"),
)
def clamp(operand, out=None, low=None, high=None):
    """Each element held within `[low, high]` (a None bound leaves that side open)."""
    kind = operand.dtype.type
    return np.clip(
        operand, None if low is None else kind(low), None if high is None else kind(high), out=out
    )


def _derive_clamp_window(algebra, inputs, output, gradient, needs, low=None, high=None):
    # A step function: flat wherever it has a derivative.
    return (None,)


@primitive(
    "clamp_window",
    1,
    _infer_clamp,
    _derive_clamp_window,
    memory=ELEMENTWISE,
    corner=Corner(_window_side, "a clamp's bound"),
)
def clamp_window(operand, out=None, low=None, high=None):
    """1 where `low < x < high` (strictly; None leaves a side open), else 0."""
    inside = np.ones(operand.shape, bool)
    if low is not None:
        np.logical_and(inside, operand > low, out=inside)
    if high is not None:
        np.logical_and(inside, operand < high, out=inside)
    if out is None:
        return inside.astype(operand.dtype)
    np.copyto(out, inside)
    return out


def _clamped(low, high):
    return on_parameters(lambda a: a.tape.record("clamp", (a,), low=low, high=high))


def _spread(shape):
    # Normal values scaled by 2, none within 0.05 of the bounds used below (-1, 0.5).
    def draw(rng):
        values = rng.standard_normal(shape) * 2.0
        for bound in (-1.0, 0.5):
            near = np.abs(values - bound) < 0.05
            values[near] += 0.1
        return [values]

    return draw


declare_examples(
    "clamp",
    Example("clamp", _spread((3, 4)), _clamped(-1.0, 0.5)),
    Example("clamp_low", _spread((3, 4)), _clamped(-1.0, None)),
    Example("clamp_high", _spread((3, 4)), _clamped(None, 0.5)),
)

declare_examples(
    "clamp_window",
    Example(
        "clamp_window",
        _spread((3, 4)),
        on_parameters(lambda a: a.tape.record("clamp_window", (a,), low=-1.0, high=0.5) * a),
    ),
)


def _window(xp, x, low, high):
    inside = None
    if low is not None:
        inside = x > low
    if high is not None:
        inside = (x < high) if inside is None else (inside & (x < high))
    return inside


def _emit_clamp(xp, x, low=None, high=None):
    clipped = x
    if low is not None:
        clipped = xp.where(clipped < low, xp.zeros_like(x) + low, clipped)
    if high is not None:
        clipped = xp.where(clipped > high, xp.zeros_like(x) + high, clipped)
    # x itself (its gradient 1) strictly inside the window, the clipped constant elsewhere.
    return xp.where(_window(xp, x, low, high), x, xp.stop_gradient(clipped))


declare_emission("clamp", _emit_clamp)
declare_emission(
    "clamp_window", lambda xp, x, low=None, high=None: xp.as_float(_window(xp, x, low, high))
)

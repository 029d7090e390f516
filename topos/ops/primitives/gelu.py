"""gelu and gelu_gradient: the Gaussian error linear unit in its tanh approximation,
`0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`, and the gradient sent back through it.

Fused because the composed form is eight elementwise nodes over a transformer's widest
activations, and its rules a dozen more; these write their output in place, pass by pass.

The kernels compute it through the identity `(1 + tanh(u)) / 2 = 1 / (1 + exp(-2u))`, so
`gelu(x) = x / (1 + exp(-2u))`: NumPy's float32 `exp` costs about a third of its `tanh`
on this project's machines (docs/performance/kernel-decisions.md), and the quotient is
finite for every finite x (`exp` overflowing to inf gives a signed 0, as gelu's limit
is). The forms agree to float32 rounding.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters, recorded
from topos.ops.memory_order import follows_dense_operand
from topos.ops.memory_rules import ELEMENTWISE, MemoryRules
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import fail, same
from topos.tensor import Shape

#: sqrt(2 / pi) and the cubic's coefficient of the approximation (PyTorch's, "tanh").
ROOT_TWO_OVER_PI = math.sqrt(2.0 / math.pi)
CUBIC = 0.044715


def _derive_gelu(algebra, inputs, output, gradient, needs):
    return (algebra.gelu_gradient(inputs[0], gradient),)


class _Coefficients(NamedTuple):
    """The kernels' constants as scalars of one dtype."""

    one: np.generic
    exponent_linear: np.generic  # -2k
    exponent_cubic: np.generic  # -2k a
    bend_linear: np.generic  # 2k
    bend_cubic: np.generic  # 6k a


@functools.cache
def _coefficients(kind: type) -> _Coefficients:
    """The constants as `kind` scalars, made once: making a NumPy scalar costs about a
    third of a pass over one of gelu_product's blocks, and the kernels take a dozen."""
    return _Coefficients(
        one=kind(1),
        exponent_linear=kind(-2.0 * ROOT_TWO_OVER_PI),
        exponent_cubic=kind(-2.0 * CUBIC * ROOT_TWO_OVER_PI),
        bend_linear=kind(2.0 * ROOT_TWO_OVER_PI),
        bend_cubic=kind(6.0 * CUBIC * ROOT_TWO_OVER_PI),
    )


def _exponent(
    operand: np.ndarray, square: np.ndarray, out: np.ndarray, constants: _Coefficients
) -> np.ndarray:
    """`-2u = x (-2k - 2k a x^2)`, k = sqrt(2 / pi), into `out` from `square` = x^2
    (scaling by -2 is exact)."""
    np.multiply(square, constants.exponent_cubic, out=out)
    np.add(out, constants.exponent_linear, out=out)
    return np.multiply(out, operand, out=out)


#: What the kernels' exponential may do, to a correct limit (see the module): callers of
#: the unguarded forms below run them under `np.errstate(**OVERFLOW_IS_A_LIMIT)`, once
#: around a loop of blocks rather than once a block (entering it costs about 3 us).
OVERFLOW_IS_A_LIMIT = {"over": "ignore", "divide": "ignore"}


def gelu_unguarded(operand: np.ndarray, out: np.ndarray) -> np.ndarray:
    """gelu of `operand` into `out`, under the caller's `np.errstate(**OVERFLOW_IS_A_LIMIT)`."""
    constants = _coefficients(operand.dtype.type)
    _exponent(operand, np.multiply(operand, operand, out=out), out, constants)
    np.exp(out, out=out)
    np.add(out, constants.one, out=out)
    return np.divide(operand, out, out=out)


@primitive("gelu", 1, same, _derive_gelu, memory=ELEMENTWISE, value_method=True)
def gelu(operand, out=None):
    """`0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))` of each element, computed as
    `x / (1 + exp(-2u))` (see the module)."""
    if out is None:
        out = np.empty(operand.shape, dtype=operand.dtype)
    with np.errstate(**OVERFLOW_IS_A_LIMIT):
        return gelu_unguarded(operand, out)


def _infer_gelu_gradient(operand: Shape, gradient: Shape) -> Shape:
    if operand != gradient:
        raise fail("gelu_gradient", f"operand {operand} and gradient {gradient} differ in shape")
    return operand


def _derive_gelu_gradient(algebra, inputs, output, gradient, needs):
    # y = g gelu'(x). In g: h gelu'(x), this very kernel. In x: h g gelu''(x), with
    # t = tanh(u), u = k (x + a x^3), u' = k (1 + 3 a x^2), u'' = 6 a k x:
    # gelu'' = (1 - t^2) (u' - x t u'^2 + x u'' / 2).
    operand, incoming = inputs
    operand_part = incoming_part = None
    if needs[0]:

        def constant(value):
            return algebra.constant(value, Shape(()))

        square = algebra.mul(operand, operand)
        argument = algebra.mul(
            constant(ROOT_TWO_OVER_PI),
            algebra.mul(operand, algebra.add(constant(1.0), algebra.mul(constant(CUBIC), square))),
        )
        tangent = algebra.tanh(argument)
        slope = algebra.mul(
            constant(ROOT_TWO_OVER_PI),
            algebra.add(constant(1.0), algebra.mul(constant(3.0 * CUBIC), square)),
        )
        bend = algebra.mul(constant(3.0 * CUBIC * ROOT_TWO_OVER_PI), operand)
        inner = algebra.sub(
            slope, algebra.mul(algebra.mul(operand, tangent), algebra.mul(slope, slope))
        )
        inner = algebra.add(inner, algebra.mul(operand, bend))
        sech = algebra.sub(constant(1.0), algebra.mul(tangent, tangent))
        curvature = algebra.mul(sech, inner)
        operand_part = algebra.mul(algebra.mul(gradient, incoming), curvature)
    if needs[1]:
        incoming_part = algebra.gelu_gradient(operand, gradient)
    return operand_part, incoming_part


def _two_scratches(operand: Shape, gradient: Shape) -> int:
    return 2 * operand.volume


@primitive(
    "gelu_gradient",
    2,
    _infer_gelu_gradient,
    _derive_gelu_gradient,
    memory=MemoryRules(workspace=_two_scratches, layout=follows_dense_operand),
)
def gelu_gradient(operand, gradient, out=None, workspace=None):
    """`g * gelu'(x)`, as `g s (1 + x u'' (1 - s))` with `s = 1 / (1 + exp(-2u))` (that is
    `(1 + tanh(u)) / 2`), `u = k (x + a x^3)` and `u'' = 2u' = 2k (1 + 3 a x^2)`; `1 - s`
    made as `1 / (1 + 1 / exp(-2u))`, exact where s is near 1, and both 0 or 1 (never
    NaN) where the exponential overflows or vanishes: two scratches, no temporaries."""
    if out is None:
        out = np.empty(operand.shape, dtype=operand.dtype)
    size = operand.size
    if workspace is not None and workspace.size >= 2 * size:
        scratches = workspace[: 2 * size]
    else:
        scratches = np.empty(2 * size, dtype=operand.dtype)
    with np.errstate(**OVERFLOW_IS_A_LIMIT):
        return gelu_gradient_unguarded(operand, gradient, out, scratches)


def gelu_gradient_unguarded(
    operand: np.ndarray, gradient: np.ndarray, out: np.ndarray, scratches: np.ndarray
) -> np.ndarray:
    """gelu_gradient into `out`, with `scratches` (flat, twice the operand's size), under
    the caller's `np.errstate(**OVERFLOW_IS_A_LIMIT)`. The first scratch is left holding
    `1 + exp(-2u)`, gelu's denominator (see `gelu_product_both_gradients`), and
    `gradient` is read last, so it may be the next thing a caller overwrites."""
    constants = _coefficients(operand.dtype.type)
    one = constants.one
    size = operand.size
    denominator = scratches[:size].reshape(operand.shape)
    second = scratches[size : 2 * size].reshape(operand.shape)
    # x^2 once, in `out` until x u'' is made from it: a pass fewer (the same operations,
    # so the same bits).
    square = np.multiply(operand, operand, out=out)
    _exponent(operand, square, denominator, constants)
    np.exp(denominator, out=denominator)
    # 1 - s, into the second scratch
    np.divide(one, denominator, out=second)
    np.add(second, one, out=second)
    np.divide(one, second, out=second)
    np.add(denominator, one, out=denominator)
    # out = x u'' = x (2k + 6 k a x^2)
    np.multiply(square, constants.bend_cubic, out=out)
    np.add(out, constants.bend_linear, out=out)
    np.multiply(out, operand, out=out)
    # out = s (1 + x u'' (1 - s)) g, s made in the second scratch once 1 - s is used, so
    # the denominator survives
    np.multiply(out, second, out=out)
    np.add(out, one, out=out)
    np.multiply(out, np.divide(one, denominator, out=second), out=out)
    return np.multiply(out, gradient, out=out)


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "gelu",
    Example("gelu", normal((3, 4)), on_parameters(lambda a: a.gelu())),
)

declare_examples(
    "gelu_gradient",
    Example("gelu_gradient", normal((3, 4), (3, 4)), recorded("gelu_gradient")),
)

# Emission: the tanh approximation composed; its gradient as the formula ---------------


def emit_gelu(xp, x):
    """gelu written in a peer (see topos.ops.emission)."""
    return 0.5 * x * (1.0 + xp.tanh(ROOT_TWO_OVER_PI * (x + CUBIC * x * x * x)))


def emit_gelu_slope(xp, x):
    """gelu'(x) written in a peer."""
    t = xp.tanh(ROOT_TWO_OVER_PI * (x + CUBIC * x * x * x))
    slope = ROOT_TWO_OVER_PI * (1.0 + 3.0 * CUBIC * x * x)
    return 0.5 * (1.0 + t) + 0.5 * x * slope * (1.0 - t * t)


declare_emission("gelu", emit_gelu)
declare_emission("gelu_gradient", lambda xp, x, gradient: gradient * emit_gelu_slope(xp, x))

"""sigmoid: the logistic function `1 / (1 + exp(-x))`, one kernel.

Below about -88 `exp(-x)` overflows to inf in float32 and the kernel gives exactly 0, as
it should; the derivative rule reads the output alone, so no rule ever multiplies that
inf by 0 (the composed quotient's rule would, giving NaN). Computed through `exp`, not
as `0.5 + 0.5 tanh(x / 2)`: NumPy's float32 tanh costs about 1.6x its exp on this
project's machines (docs/performance/kernel-decisions.md), and the two agree to float32 rounding.
"""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters
from topos.ops.memory_rules import ELEMENTWISE
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import same
from topos.tensor import Shape


def _derive_sigmoid(algebra, inputs, output, gradient, needs):
    # s' = s (1 - s): from the output alone, so a forward plan frees x at once.
    one = algebra.constant(1.0, Shape(()))
    return (algebra.mul(gradient, algebra.mul(output, algebra.sub(one, output))),)


#: One in each float dtype, made once: a Python or NumPy scalar made a call costs more
#: than the add it feeds on a recurrent cell's small gates.
_ONES = {np.dtype(np.float32): np.float32(1), np.dtype(np.float64): np.float64(1)}


def logistic(operand: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """`1 / (1 + exp(-x))` of each element, written into `out` (shared with silu): 0
    where `exp(-x)` overflows, 1 where it underflows, finite everywhere."""
    one = _ONES.get(operand.dtype) or operand.dtype.type(1)
    out = np.negative(operand, out=out)
    with np.errstate(over="ignore"):
        np.exp(out, out=out)
    np.add(out, one, out=out)
    # `reciprocal` is `1 / x` correctly rounded, as `divide(1, x)` is, without the
    # scalar operand's conversion (tests/ops/test_sigmoid_bits.py compares the two).
    return np.reciprocal(out, out=out)


@primitive("sigmoid", 1, same, _derive_sigmoid, memory=ELEMENTWISE, value_method=True)
def sigmoid(operand, out=None):
    """The logistic function `1 / (1 + exp(-x))` of each element, stable for every input."""
    return logistic(operand, out)


declare_examples(
    "sigmoid",
    Example("sigmoid", normal((3, 4)), on_parameters(lambda a: a.sigmoid())),
)

# Emission: the peer's own logistic function.
declare_emission("sigmoid", lambda xp, x: xp.sigmoid(x))

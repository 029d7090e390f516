"""sigmoid: the logistic function `1 / (1 + exp(-x))`, computed as `0.5 + 0.5 tanh(x / 2)`.

The tanh form is the same function, finite for every finite input: `exp(-x)` overflows
below about -88 in float32, and the quotient's rule then multiplies inf by 0 (NaN).
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


def logistic(operand: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """`0.5 + 0.5 tanh(x / 2)` of each element, written into `out` (shared with silu)."""
    kind = operand.dtype.type
    out = np.multiply(operand, kind(0.5), out=out)
    np.tanh(out, out=out)
    np.multiply(out, kind(0.5), out=out)
    return np.add(out, kind(0.5), out=out)


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

"""tensor_power: `base ** exponent` elementwise with a tensor exponent, both broadcast
(PyTorch's `torch.pow(x, y)` with `y` a tensor; a constant exponent is `power`).

Where it makes sense: the exponent's gradient `x^y ln x` needs a positive base (for a
base of 0 or below it is NaN, as PyTorch's is), so use it on positive bases, or with an
exponent that is not differentiated.
"""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, both, normal, on_parameters, positive
from topos.ops.memory_rules import ELEMENTWISE
from topos.ops.primitive import declare_examples, primitive
from topos.ops.primitives.reduction import reduce_to
from topos.ops.shape_rules import elementwise
from topos.tensor import Shape


def _derive_tensor_power(algebra, inputs, output, gradient, needs):
    base, exponent = inputs
    base_part = exponent_part = None
    if needs[0]:
        # d(x^y)/dx = y x^(y-1)
        one = algebra.constant(1.0, Shape(()))
        lowered = algebra.tensor_power(base, algebra.sub(exponent, one))
        base_part = algebra.mul(gradient, algebra.mul(exponent, lowered))
        base_part = reduce_to(algebra, base_part, algebra.shape(base))
    if needs[1]:
        # d(x^y)/dy = x^y ln x
        exponent_part = algebra.mul(gradient, algebra.mul(output, algebra.ln(base)))
        exponent_part = reduce_to(algebra, exponent_part, algebra.shape(exponent))
    return (base_part, exponent_part)


@primitive(
    "tensor_power",
    2,
    elementwise("tensor_power"),
    _derive_tensor_power,
    memory=ELEMENTWISE,
)
def tensor_power(base, exponent, out=None):
    """Each element of `base` raised to the matching element of `exponent` (broadcast)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.power(base, exponent, out=out)


declare_examples(
    "tensor_power",
    Example(
        "tensor_power",
        both(positive((2, 3)), normal((2, 3))),
        on_parameters(lambda a, b: a**b),
    ),
    Example(
        "tensor_power_broadcast",
        both(positive((2, 3)), normal((3,))),
        on_parameters(lambda a, b: a**b),
    ),
    Example(
        "tensor_power_number_base",
        normal((2, 3)),
        on_parameters(lambda a: 2.0**a),
    ),
)

declare_emission("tensor_power", lambda xp, base, exponent: base**exponent)

"""rsqrt: the reciprocal square root `1 / sqrt(x)` of each element (PyTorch's `rsqrt`)."""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, on_parameters, positive
from topos.ops.memory_rules import ELEMENTWISE
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import same
from topos.tensor import Shape


def _derive_rsqrt(algebra, inputs, output, gradient, needs):
    # d(x^-1/2)/dx = -x^-3/2 / 2 = -y^3 / 2, from the output alone.
    cube = algebra.mul(output, algebra.mul(output, output))
    return (algebra.mul(gradient, algebra.mul(cube, algebra.constant(-0.5, Shape(())))),)


@primitive("rsqrt", 1, same, _derive_rsqrt, memory=ELEMENTWISE, value_method=True)
def rsqrt(operand, out=None):
    """`1 / sqrt(x)` of each element (a square root, then one division: two roundings)."""
    out = np.sqrt(operand, out=out)
    return np.divide(operand.dtype.type(1), out, out=out)


declare_examples(
    "rsqrt",
    Example("rsqrt", positive((3, 4)), on_parameters(lambda a: a.rsqrt())),
)

# Emission: a square root, then one division, as the kernel.
declare_emission("rsqrt", lambda xp, x: 1.0 / xp.sqrt(x))

"""A user's own module of primitives, written from docs/reference/extending.md: `softsign`
(x / (1 + |x|), differentiable, with examples and an emission for the peers) and
`rounded` (the nearest integer, declared not differentiable). The tests load it by path,
as a module outside the library, and unregister what it registered after each test."""

from __future__ import annotations

import numpy as np

from topos import Shape, primitive
from topos.extension import (
    ELEMENTWISE,
    Example,
    declare_emission,
    declare_examples,
    normal,
    on_parameters,
    same,
)


def derive_softsign(algebra, inputs, output, gradient, needs):
    """d/dx x / (1 + |x|) = 1 / (1 + |x|)**2 = (1 - |y|)**2, from the output y alone."""
    one = algebra.constant(1.0, Shape(()))
    slope = algebra.sub(one, algebra.abs(output))
    return (algebra.mul(gradient, algebra.mul(slope, slope)),)


@primitive("softsign", 1, same, derive_softsign, memory=ELEMENTWISE, value_method=True)
def softsign(operand, out=None):
    """x / (1 + |x|) of each element."""
    denominator = np.abs(operand)
    np.add(denominator, operand.dtype.type(1), out=denominator)
    return np.divide(operand, denominator, out=out)


declare_examples(
    "softsign", Example("softsign", normal((3, 4)), on_parameters(lambda x: x.softsign()))
)
declare_emission("softsign", lambda xp, x: x / (1 + xp.abs(x)))


@primitive("rounded", 1, same, None, differentiable=False, memory=ELEMENTWISE, value_method=True)
def rounded(operand, out=None):
    """The nearest integer to each element (halves to even)."""
    return np.rint(operand, out=out)

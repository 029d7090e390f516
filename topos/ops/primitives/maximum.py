"""maximum: the elementwise larger operand, left-biased so ties send the gradient left."""

from __future__ import annotations

import numpy as np

from topos.ops.corner import Corner
from topos.ops.emission import declare_emission
from topos.ops.example import Example, apart, on_parameters
from topos.ops.memory_rules import ELEMENTWISE
from topos.ops.primitive import declare_examples, primitive
from topos.ops.primitives.reduction import reduce_to
from topos.ops.shape_rules import elementwise


def _derive_maximum(algebra, inputs, output, gradient, needs):
    left, right = inputs
    # The right operand wins only where it is strictly larger; on a tie the left one
    # does, which is what makes max pooling send the gradient to its earliest lane.
    right_wins = algebra.heaviside(algebra.sub(right, left))
    right_part = algebra.mul(gradient, right_wins)
    left_part = algebra.sub(gradient, right_part) if needs[0] else None
    return (
        reduce_to(algebra, left_part, algebra.shape(left)) if needs[0] else None,
        reduce_to(algebra, right_part, algebra.shape(right)) if needs[1] else None,
    )


def _right_wins(inputs, output, **attributes):
    return np.greater(inputs[1], inputs[0])


@primitive(
    "maximum",
    2,
    elementwise("maximum"),
    _derive_maximum,
    memory=ELEMENTWISE,
    corner=Corner(_right_wins, "a maximum's tie"),
    value_method=True,
)
def maximum(left, right, out=None):
    """The elementwise larger of the two operands."""
    return np.maximum(left, right, out=out)


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "maximum",
    Example("maximum", apart((3, 4)), on_parameters(lambda a, b: a.maximum(b))),
    Example("maximum_scalar_right", apart((3, 4), ()), on_parameters(lambda a, b: a.maximum(b))),
    Example("maximum_scalar_left", apart((3, 4), ()), on_parameters(lambda a, b: b.maximum(a))),
    Example("maximum_broadcast", apart((2, 3), (3,)), on_parameters(lambda a, b: a.maximum(b))),
)

# Emission: left-biased, as the rule (the right operand wins only where strictly larger).
declare_emission("maximum", lambda xp, a, b: xp.where(b > a, b, a))

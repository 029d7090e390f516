"""Is the gradient right at all? Finite differences against both routes, in float64.

`check_gradients` compares each route's gradient with directional finite
differences of the loss and, when one is wrong, checks every derivative rule on its
own (`check_rules`) to name the primitive at fault; `check_parity` runs the float32
routes on the same batch bit for bit. `register_corner` tells the check where a
primitive of your own is not differentiable.
"""

from topos.checking.check_findings import GradientCheck, ParameterCheck, ParityCheck, RuleFailure
from topos.checking.corners import register_corner
from topos.checking.gradient_check import DIRECTIONS, ROUTES, TOLERANCE, check_gradients
from topos.checking.parity_check import check_parity
from topos.checking.rule_check import check_rules

__all__ = [
    "DIRECTIONS",
    "ROUTES",
    "TOLERANCE",
    "GradientCheck",
    "ParameterCheck",
    "ParityCheck",
    "RuleFailure",
    "check_gradients",
    "check_parity",
    "check_rules",
    "register_corner",
]

"""ElementwiseMethods: the elementwise functions of a Value as methods of the class itself.

`Value.__getattr__` can record any primitive registered with `value_method`, but a
method found only there is invisible to `dir(Value)`, `help(Value.tanh)` and editors.
Each method here records one node of the primitive of its name, and says what it
computes. A new elementwise primitive works through `__getattr__` at once; add it here
so people can find it.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from topos.graph.value import Value


def _is_number(bound: object) -> bool:
    return isinstance(bound, numbers.Real) and not isinstance(bound, bool)


class ElementwiseMethods:
    """Mixed into `Value`: one recorded node per call, the operand never mutated."""

    __slots__ = ()

    def _unary(self: Value, operation: str) -> Value:
        return self.tape.record(operation, (self,))

    def exp(self: Value) -> Value:
        """e raised to each element (`torch.exp`)."""
        return self._unary("exp")

    def ln(self: Value) -> Value:
        """The natural logarithm of each element (`torch.log`)."""
        return self._unary("ln")

    def log(self: Value) -> Value:
        """The natural logarithm of each element: `ln`, by PyTorch's name."""
        return self._unary("ln")

    def sqrt(self: Value) -> Value:
        """The square root of each element (`torch.sqrt`)."""
        return self._unary("sqrt")

    def rsqrt(self: Value) -> Value:
        """`1 / sqrt(x)` of each element (`torch.rsqrt`)."""
        return self._unary("rsqrt")

    def tanh(self: Value) -> Value:
        """The hyperbolic tangent of each element (`torch.tanh`)."""
        return self._unary("tanh")

    def sigmoid(self: Value) -> Value:
        """The logistic function `1 / (1 + exp(-x))` of each element (`torch.sigmoid`): 0
        where `exp(-x)` overflows, finite with a finite gradient for every input."""
        return self._unary("sigmoid")

    def silu(self: Value) -> Value:
        """`x * sigmoid(x)` of each element (`torch.nn.functional.silu`), one fused node
        whose gradient is exactly 0, never NaN, for very negative inputs."""
        return self._unary("silu")

    def gelu(self: Value) -> Value:
        """The Gaussian error linear unit in its tanh approximation (`gelu(approximate=
        "tanh")`), one fused node."""
        return self._unary("gelu")

    def relu(self: Value) -> Value:
        """`max(x, 0)` of each element (`torch.relu`)."""
        return self._unary("relu")

    def heaviside(self: Value) -> Value:
        """1 where the element is positive, else 0: the relu mask (no gradient flows)."""
        return self._unary("heaviside")

    def abs(self: Value) -> Value:
        """The absolute value of each element (`torch.abs`; gradient 0 at 0)."""
        return self._unary("abs")

    def maximum(self: Value, other: Value | float) -> Value:
        """The larger of this value and `other` elementwise, broadcast (`torch.maximum`;
        a tie sends the gradient to this side)."""
        return self.tape.record("maximum", (self, self._coerce(other, "maximum")))

    def minimum(self: Value, other: Value | float) -> Value:
        """The smaller of this value and `other` elementwise, broadcast (`torch.minimum`):
        `-maximum(-x, -other)`, exact, a tie sending the gradient to this side."""
        return -((-self).maximum(-self._coerce(other, "minimum")))

    def erf(self: Value) -> Value:
        """The error function of each element (`torch.erf`; the exact GELU's)."""
        return self._unary("erf")

    def sin(self: Value) -> Value:
        """The sine of each element (`torch.sin`)."""
        return self._unary("sin")

    def cos(self: Value) -> Value:
        """The cosine of each element (`torch.cos`)."""
        return self._unary("cos")

    def square(self: Value) -> Value:
        """Each element times itself (`torch.square`; `x ** 2`, an exact product)."""
        return self.tape.record("power", (self,), exponent=2.0)

    def pow(self: Value, exponent: Value | float) -> Value:
        """Each element raised to `exponent`, a number or a Value (`torch.pow`; `x ** y`)."""
        return self**exponent

    def leaky_relu(self: Value, negative_slope: float = 0.01) -> Value:
        """`x` where positive, else `negative_slope * x` (`torch.nn.functional.leaky_relu`;
        the gradient at 0 is the slope's, as PyTorch's)."""
        return self.tape.record("leaky_relu", (self,), negative_slope=float(negative_slope))

    def softplus(self: Value, beta: float = 1.0, threshold: float = 20.0) -> Value:
        """`log(1 + exp(beta x)) / beta`, and `x` where `beta x > threshold`
        (`torch.nn.functional.softplus`), stable for every input."""
        return self.tape.record("softplus", (self,), beta=float(beta), threshold=float(threshold))

    def clamp(
        self: Value, min: Value | float | None = None, max: Value | float | None = None
    ) -> Value:
        """Each element held within `[min, max]` (either may be None; `torch.clamp`).
        Number bounds record one `clamp` node, whose gradient passes strictly inside the
        window, as PyTorch's; Value bounds record a `maximum` and a `minimum`, whose ties
        send the gradient to this value (PyTorch's split it in half)."""
        if min is None and max is None:
            raise TypeError("clamp: give min, max or both")
        if (min is None or _is_number(min)) and (max is None or _is_number(max)):
            low = None if min is None else float(min)
            high = None if max is None else float(max)
            return self.tape.record("clamp", (self,), low=low, high=high)
        result = self if min is None else self.maximum(min)
        return result if max is None else result.minimum(max)

    def clip(
        self: Value, min: Value | float | None = None, max: Value | float | None = None
    ) -> Value:
        """`clamp`, by its other name (`torch.clip`, `np.clip`)."""
        return self.clamp(min, max)

"""ElementwiseMethods: the elementwise functions of a Value as methods of the class itself.

`Value.__getattr__` can record any primitive registered with `value_method`, but a
method found only there is invisible to `dir(Value)`, `help(Value.tanh)` and editors.
Each method here records one node of the primitive of its name, and says what it
computes. A new elementwise primitive works through `__getattr__` at once; add it here
so people can find it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from topos.graph.value import Value


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

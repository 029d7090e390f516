"""gelu: the Gaussian error linear unit (the tanh approximation, PyTorch's `approximate="tanh"`)."""

from __future__ import annotations

from topos.graph.value import Value


def gelu(value: Value) -> Value:
    """`0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))` of each element: one fused
    `gelu` node (also `value.gelu()`)."""
    return value.tape.record("gelu", (value,))

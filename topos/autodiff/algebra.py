"""Algebra: the small vocabulary of operations that derivative rules are written in.

A concrete algebra says what an operand is and how `apply` performs one
primitive on operands: the eager algebra computes arrays now, the recording
algebra appends nodes to a tape, the shape algebra infers shapes and layouts.
Every registered primitive is an operation of every algebra, by its name:
`algebra.mul(a, b)` is `algebra.apply("mul", (a, b))`, and attributes go by keyword
(`algebra.permute(g, axes=(1, 0))`). So a rule means exactly the same sequence of
kernels under either algebra, and a new primitive needs no method here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from topos.ops import REGISTRY
from topos.tensor import Shape


class Algebra:
    """Base class of the algebras; rules call `shape`, `constant` and one operation per
    registered primitive (see the module)."""

    def apply(self, operation: str, operands: Sequence[Any], **attributes: Any) -> Any:
        """Performs primitive `operation` on `operands` with its static `attributes`."""
        raise NotImplementedError

    def shape(self, operand: Any) -> Shape:
        """The shape of an operand."""
        raise NotImplementedError

    def constant(self, value: float, shape: Shape) -> Any:
        """An operand of `shape` filled with `value`, in the graph's dtype."""
        raise NotImplementedError

    def __getattr__(self, name: str) -> Callable[..., Any]:
        # Only called when ordinary lookup fails: the registered primitives. The method
        # is made once and set on the class, so later lookups of it are ordinary ones
        # (a sweep looks up dozens of operations a step).
        primitive = REGISTRY.get(name)
        if primitive is None:
            raise AttributeError(f"{type(self).__name__} has no operation {name!r}")
        operation = _operation(name, primitive.arity, primitive.kernel.__doc__)
        setattr(Algebra, name, operation)
        return operation.__get__(self)


def _operation(name: str, arity: int, doc: str | None) -> Callable[..., Any]:
    """The method `algebra.<name>(*operands, **attributes)`: `apply` of the primitive."""

    def operation(self: Algebra, *operands: Any, **attributes: Any) -> Any:
        # A kernel would take a stray positional attribute for its `out` array.
        if len(operands) != arity:
            raise TypeError(
                f"{name} takes {arity} operand(s), not {len(operands)}; "
                f"pass its attributes by keyword"
            )
        return self.apply(name, operands, **attributes)

    operation.__name__ = name
    operation.__doc__ = doc
    return operation

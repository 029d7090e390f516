"""RecordingAlgebra: runs derivative rules by appending their operations to a tape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from topos.autodiff.algebra import Algebra
from topos.graph.value import Value
from topos.tensor import Shape, Tensor

if TYPE_CHECKING:
    from topos.graph.tape import Tape


class RecordingAlgebra(Algebra):
    """Operands are Values; each operation records a node whose kernel is the eager one."""

    def __init__(self, tape: Tape) -> None:
        self.tape = tape

    def apply(self, operation: str, operands: Sequence[Value], **attributes: Any) -> Value:
        """Records `operation` on `operands` and returns the new node's Value."""
        return self.tape.record(operation, operands, **attributes)

    def shape(self, operand: Value) -> Shape:
        """The recorded shape of the operand."""
        return operand.shape

    def constant(self, value: float, shape: Shape) -> Value:
        """A leaf filled with `value`: the same payload the eager algebra would make."""
        return self.tape.leaf(Tensor.filled(shape, value, dtype=self.tape.dtype))

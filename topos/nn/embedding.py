"""embedding and Embedding: rows of a table picked by an index input (token ids)."""

from __future__ import annotations

from topos.errors import ShapeError
from topos.graph.symbol import Symbol
from topos.graph.tape import Tape
from topos.graph.value import Value
from topos.nn.module import Module
from topos.tensor import Tensor


def embedding(table: Value, indices: Value) -> Value:
    """Row `indices[...]` of `table [rows, features]`: `[..., features]`. The gradient
    of the table adds each gradient row back at its index, in index order."""
    if not indices.tape.holds_indices(indices):
        if table.tape.holds_indices(table):
            # torch.nn.functional.embedding(input, weight) takes the indices first.
            raise TypeError(
                "embedding(table, indices): the table comes first, then the index input "
                "(torch.nn.functional.embedding takes them the other way round)"
            )
        raise TypeError("embedding: the indices must be an index input (tape.input(Indices...))")
    bound = indices.tape.nodes[indices.index].attributes["classes"]
    if table.shape.rank != 2 or bound > table.shape[0]:
        raise ShapeError(
            f"embedding: indices below {bound} pick rows of a [rows, features] table with at "
            f"least {bound} rows, not {table.shape}"
        )
    return table.tape.record("embedding", (table, indices))


class Embedding(Module):
    """A table of `[rows, features]` rows, recorded as one parameter named `name`."""

    def __init__(self, tape: Tape, table: Tensor, name: str | None = None) -> None:
        if table.shape.rank != 2:
            raise ShapeError(f"Embedding: table {table.shape} must be [rows, features]")
        self.name = name
        self._table = tape.parameter(table, name)

    @property
    def table(self) -> Symbol:
        """The symbol of the table parameter."""
        return self._table.symbol

    def express(self, value: Value) -> Value:
        """Records the rows `value` (an index input) picks."""
        return embedding(self._table, value)

    def parameters(self) -> list[Symbol]:
        """The table."""
        return [self._table.symbol]

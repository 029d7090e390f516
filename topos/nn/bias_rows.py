"""BiasRows: a bias broadcast down a batch of rows, recorded once for every use.

A layer expressed more than once on one tape (a cell unrolled over a sequence, a layer
shared between branches) adds its bias to a `[rows, outputs]` product every time. One
`broadcast` node every use is one kernel a use forward and, for its gradient, one column
sum a use; a single node that every use adds makes the gradient one column sum of the
uses' total. The node is kept per row count, and made again should the tape no longer
hold it (a tape forgets nodes only past a failed `differentiate`, which records no
layer, so that is a safeguard).
"""

from __future__ import annotations

from topos.graph.value import Value


class BiasRows:
    """The broadcast of one `bias` `[outputs]` down `rows` rows, by row count."""

    def __init__(self, bias: Value) -> None:
        self.bias = bias
        self._made: dict[int, Value] = {}

    def down(self, rows: int) -> Value:
        """`bias` broadcast to `[rows, outputs]`: the node made before for `rows`, if the
        tape still holds it, else a new one."""
        made = self._made.get(rows)
        if made is None or not _holds(made, self.bias, rows):
            made = self._made[rows] = self.bias.broadcast_along(0, rows)
        return made


def _holds(made: Value, bias: Value, rows: int) -> bool:
    nodes = made.tape.nodes
    if made.index >= len(nodes):
        return False
    node = nodes[made.index]
    return (
        node.operation == "broadcast"
        and node.inputs == (bias.index,)
        and node.attributes.get("axis") == 0
        and node.attributes.get("size") == rows
    )

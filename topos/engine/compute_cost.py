"""Compute cost: how much work evaluating a node is, for the remat schedule and its report.

Two figures per node, both pure functions of shapes, so a schedule built from them is
the same on every machine and every run:

- `flops`: floating-point operations, as the literature counts them: `2 m n k` for a
  product, one per output element for an elementwise kernel, one per element read for
  a reduction or a copy. This is what `describe()` reports as the recomputation's
  extra FLOPs.
- `cost`: a roofline estimate of the kernel's time in FLOP units: its FLOPs plus
  `ELEMENT_COST` for every element it reads or writes. On the development machine
  (`benchmarks/profile_step.py`) a matrix product runs at about 20 ps per FLOP while
  the copy and elementwise kernels move about one element per 0.5 ns, so an element
  through memory costs about as much as 24 FLOPs; FLOPs alone would call an im2col
  (no arithmetic, millions of elements moved) free, and it is not.

A primitive's FLOPs are its own to count (`Primitive.flops`, declared beside its kernel:
a product's `2 m n k`); one that does not count them is charged the larger of its
output's and its largest operand's volume. A kernel that returns a view of its operand
costs nothing, and the caller says which nodes are views (that depends on the memory
plan's layouts, not on the operation alone).
"""

from __future__ import annotations

from collections.abc import Sequence

from topos.graph.node import Node

#: FLOPs charged for every element a kernel reads or writes (see the module).
ELEMENT_COST = 24


def flops(node: Node, nodes: Sequence[Node], view: bool = False) -> int:
    """The floating-point operations of evaluating `node` (0 for a source or a view)."""
    if node.is_source or view:
        return 0
    operands = [nodes[i].shape for i in node.inputs]
    rule = node.primitive.flops
    if rule is not None:
        return int(rule(node.shape, *operands, **node.attributes))
    # Not counted by the primitive: one FLOP per element of its largest array.
    return max([node.shape.volume, *(shape.volume for shape in operands)])


def moved_elements(node: Node, nodes: Sequence[Node]) -> int:
    """Elements a kernel reads and writes: every operand once, the output once."""
    return node.shape.volume + sum(nodes[i].shape.volume for i in node.inputs)


def cost(node: Node, nodes: Sequence[Node], view: bool = False) -> int:
    """The estimated time of evaluating `node`, in FLOP units (see the module); a view
    costs nothing."""
    if node.is_source or view:
        return 0
    return flops(node, nodes) + ELEMENT_COST * moved_elements(node, nodes)

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

A primitive's FLOPs default to the larger of its output's and its largest operand's
volume; products say more with `register_flops`. A kernel that returns a view of its
operand costs nothing, and the caller says which nodes are views (that depends on the
memory plan's layouts, not on the operation alone).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from topos.graph.node import Node
from topos.ops.winograd_transforms import POSITIONS, TILE, winograd_flops
from topos.tensor import Shape

#: FLOPs charged for every element a kernel reads or writes (see the module).
ELEMENT_COST = 24

FlopsRule = Callable[..., int]

_RULES: dict[str, FlopsRule] = {}


def register_flops(operation: str, rule: FlopsRule) -> None:
    """Counts the FLOPs of `operation` as `rule(output shape, *operand shapes,
    **attributes)` instead of one per element (a product's `2 m n k`)."""
    _RULES[operation] = rule


def _product(output: Shape, left: Shape, right: Shape, inner_axis: int) -> int:
    return 2 * output.volume * left[inner_axis]


register_flops("matmul", lambda output, left, right: _product(output, left, right, -1))
register_flops("matmul_nt", lambda output, left, right: _product(output, left, right, -1))
register_flops("matmul_tn", lambda output, left, right: _product(output, left, right, -2))
register_flops("convolution_kernel", lambda output, left, right: _product(output, left, right, -2))
register_flops(
    "convolution",
    lambda output, patches, kernel, images, **attributes: _product(output, patches, kernel, -1),
)
# col2im(gradient @ kernel^T): the product, then one add per product entry.
register_flops(
    "convolution_images",
    lambda output, gradient, kernel, **attributes: (2 * gradient.volume + gradient[0]) * kernel[0],
)
# The Winograd transforms: one product with a Kronecker matrix each.
register_flops(
    "winograd_input",
    lambda output, images, **attributes: winograd_flops(output[1], images[1], POSITIONS),
)
register_flops(
    "winograd_input_adjoint",
    lambda output, tiles, **attributes: winograd_flops(tiles[1], tiles[2], POSITIONS),
)
register_flops(
    "winograd_output",
    lambda output, products, **attributes: winograd_flops(products[1], products[2], TILE * TILE),
)
register_flops(
    "winograd_output_adjoint",
    lambda output, rows, **attributes: winograd_flops(output[1], output[2], TILE * TILE),
)


def flops(node: Node, nodes: Sequence[Node], view: bool = False) -> int:
    """The floating-point operations of evaluating `node` (0 for a source or a view)."""
    if node.is_source or view:
        return 0
    operands = [nodes[i].shape for i in node.inputs]
    rule = _RULES.get(node.operation)
    if rule is not None:
        return int(rule(node.shape, *operands, **node.attributes))
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

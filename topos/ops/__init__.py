"""The primitives: each module registers its operations fully (shape rule, kernel, derivative
rule, view and memory-order rules); `REGISTRY` maps every name to its `Primitive`."""

from topos.ops import (  # noqa: F401  (importing registers the primitives)
    arithmetic,
    convolution,
    convolution_product,
    gather,
    lane_maximum,
    layout,
    matmul,
    maximum,
    padding,
    pooling,
    reduction,
    unary,
    windows,
)
from topos.ops.patch_window import PatchWindow
from topos.ops.primitive import REGISTRY, Primitive, lookup

__all__ = ["REGISTRY", "PatchWindow", "Primitive", "lookup"]

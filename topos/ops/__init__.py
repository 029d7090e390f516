"""The primitives: each module registers its operations fully (shape rule, kernel, derivative
rule, view and memory-order rules); `REGISTRY` maps every name to its `Primitive`."""

from topos.ops import (  # noqa: F401  (importing registers the primitives)
    arithmetic,
    class_indices,
    convolution,
    convolution_product,
    embedding,
    gather,
    gelu,
    gelu_product,
    lane_maximum,
    layout,
    matmul,
    maximum,
    padding,
    pooling,
    reduction,
    softmax,
    standardize,
    unary,
    windows,
    winograd_transforms,
)
from topos.ops.patch_window import PatchWindow
from topos.ops.primitive import REGISTRY, Primitive, lookup

__all__ = ["REGISTRY", "PatchWindow", "Primitive", "lookup"]

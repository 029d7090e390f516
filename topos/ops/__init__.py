"""The primitives: each module registers its operations' shape rule, kernel and derivative rule."""

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
from topos.ops.algebra import Algebra
from topos.ops.primitive import REGISTRY, Primitive, lookup

__all__ = ["REGISTRY", "Algebra", "Primitive", "lookup"]

"""The table of differentiable cases: every example the registered primitives declare
(`Primitive.examples`, beside each primitive in its own module), and the composites
(recorded from several primitives, so declared here). Each case says which operation it
is about (`subject`), how to draw its parameter values (kept away from corners) and how to
record it.

A primitive without an example fails `test_every_primitive_has_a_case`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tests.support.routes import Build
from topos import (
    Conv2d,
    Embedding,
    Indices,
    LayerNorm,
    Linear,
    Tape,
    Tensor,
    causal_self_attention,
    conv2d,
    conv2d_max_pool,
    cross_entropy,
    gelu,
    layer_norm,
    max_pool,
)
from topos.nn.loss import log_softmax, softmax
from topos.ops import REGISTRY
from topos.ops.example import (
    TOKENS,
    Draw,
    Example,
    distinct,
    normal,
    on_parameters,
    window,
)

__all__ = ["TOKENS", "on_parameters", "window"]


@dataclass(frozen=True)
class Case:
    """One expression to differentiate, and the operation it is about (`subject`)."""

    name: str
    subject: str
    draw: Draw
    build: Build

    @property
    def example(self) -> Example:
        """The case as a primitive's example: its seed and values are drawn as one's are."""
        return Example(self.name, self.draw, self.build)

    @property
    def seed(self) -> int:
        """A seed fixed by the case's name, for its values and its output weighting."""
        return self.example.seed

    def arrays(self) -> list[np.ndarray]:
        """The case's float64 parameter values."""
        return self.example.arrays()

    def __repr__(self) -> str:
        return self.name


def with_phases(attributes: dict, phases: int) -> dict:
    """`attributes` with their window's rows taken in `phases` phases."""
    return {**attributes, "window": replace(attributes["window"], phases=phases)}


# Primitives: the examples each declares beside itself ----------------------------------

PRIMITIVE_CASES: list[Case] = [
    Case(example.name, primitive.name, example.draw, example.build)
    for primitive in REGISTRY.values()
    for example in primitive.examples
]

# `fold` onto a length longer than its windows need: the last positions receive no lane.
FOLD_WITH_SLACK = Case(
    "fold_slack", "fold", normal((2, 1, 2)), on_parameters(lambda a: a.fold(1, 4, 1))
)


# Composites -------------------------------------------------------------------------------


def _conv_case(stride: int, padding: int) -> Case:
    return Case(
        f"conv2d_stride{stride}_padding{padding}",
        "conv2d",
        normal((2, 2, 5, 5), (3, 2, 3, 3), (3,)),
        on_parameters(lambda x, w, b: conv2d(x, w, b, stride=stride, padding=padding)),
    )


def _conv_layer(tape: Tape, tensors: list[Tensor]):
    images = tape.parameter(tensors[0])
    layer = Conv2d(tape, tensors[1], tensors[2], stride=2, padding=1)
    return layer.express(images), [images.symbol, layer.weights, layer.bias]


def _conv_pool_case(name, images, filters, stride, padding, pool) -> Case:
    """conv2d_max_pool on normal values: its scores are sums of products of normals, so
    no two lanes of a pooling window come within a finite-difference step of a tie."""
    channels = images[1]
    return Case(
        name,
        "conv2d_max_pool",
        normal(images, (filters, channels, 3, 3), (filters,)),
        on_parameters(
            lambda x, w, b: conv2d_max_pool(x, w, b, stride=stride, padding=padding, pool=pool)
        ),
    )


def _conv_pool_over_input(name, images, filters, stride, padding, pool) -> Case:
    """conv2d_max_pool over fixed images fed as an input (phase-major patch rows, lanes
    on axis 0); only the weights and the bias vary and are differentiated."""
    fixed = np.random.default_rng(8).standard_normal(images)
    channels = images[1]

    def build(tape: Tape, tensors: list[Tensor]):
        x = tape.input(Tensor(images, fixed, dtype=tape.dtype))
        weights, bias = (tape.parameter(tensor) for tensor in tensors)
        output = conv2d_max_pool(x, weights, bias, stride=stride, padding=padding, pool=pool)
        return output, [weights.symbol, bias.symbol]

    return Case(name, "conv2d_max_pool", normal((filters, channels, 3, 3), (filters,)), build)


def _conv_pool_layer(tape: Tape, tensors: list[Tensor]):
    images = tape.parameter(tensors[0])
    layer = Conv2d(tape, tensors[1], tensors[2], stride=1, padding=1)
    return layer.express_max_pooled(images, 2), [images.symbol, layer.weights, layer.bias]


def _linear_layer(tape: Tape, tensors: list[Tensor]):
    rows = tape.parameter(tensors[0])
    layer = Linear(tape, tensors[1], tensors[2])
    return layer.express(rows), [rows.symbol, layer.weights, layer.bias]


def _bias_free_linear_layer(tape: Tape, tensors: list[Tensor]):
    rows = tape.parameter(tensors[0])
    layer = Linear(tape, tensors[1], None)
    assert layer.bias is None and layer.parameters() == [layer.weights]
    return layer.express(rows), [rows.symbol, layer.weights]


def _bias_free_conv_layer(tape: Tape, tensors: list[Tensor]):
    images = tape.parameter(tensors[0])
    layer = Conv2d(tape, tensors[1], None, stride=1, padding=1)
    assert layer.parameters() == [layer.weights]
    return layer.express(images), [images.symbol, layer.weights]


def _cross_entropy(tape: Tape, tensors: list[Tensor]):
    logits = tape.parameter(tensors[0])
    targets = tape.leaf(Tensor.selection([3, 0, 4, 0], 5, dtype=tape.dtype))
    return cross_entropy(logits, targets), [logits.symbol]


COMPOSITE_CASES: list[Case] = [
    _conv_case(1, 0),
    _conv_case(1, 1),
    _conv_case(2, 0),
    _conv_case(2, 1),
    Case("Conv2d_layer", "conv2d", normal((2, 2, 5, 5), (3, 2, 3, 3), (3,)), _conv_layer),
    _conv_pool_case("conv2d_max_pool_2x2", (2, 2, 4, 4), 3, 1, 1, 2),
    _conv_pool_case("conv2d_max_pool_stride2", (1, 2, 7, 7), 3, 2, 1, 2),
    _conv_pool_case("conv2d_max_pool_3x3_valid", (1, 2, 8, 8), 2, 1, 0, 3),
    _conv_pool_over_input("conv2d_max_pool_2x2_over_input", (2, 2, 4, 4), 3, 1, 1, 2),
    _conv_pool_over_input("conv2d_max_pool_3x3_valid_over_input", (1, 2, 8, 8), 2, 1, 0, 3),
    Case(
        "Conv2d_layer_max_pooled",
        "conv2d_max_pool",
        normal((2, 2, 4, 6), (3, 2, 3, 3), (3,)),
        _conv_pool_layer,
    ),
    Case(
        "max_pool_2x2_stride2",
        "max_pool",
        distinct((2, 2, 4, 4)),
        on_parameters(lambda x: max_pool(x, 2, 2)),
    ),
    Case(
        "max_pool_2x2_stride1",
        "max_pool",
        distinct((1, 2, 4, 4)),
        on_parameters(lambda x: max_pool(x, 2, 1)),
    ),
    Case(
        "max_pool_3x3_stride2",
        "max_pool",
        distinct((1, 2, 5, 5)),
        on_parameters(lambda x: max_pool(x, 3, 2)),
    ),
    Case("cross_entropy", "cross_entropy", normal((4, 5)), _cross_entropy),
    Case("softmax", "softmax", normal((3, 4)), on_parameters(lambda x: softmax(x))),
    Case("log_softmax", "log_softmax", normal((3, 4)), on_parameters(lambda x: log_softmax(x))),
    Case(
        "log_softmax_axis0",
        "log_softmax",
        normal((3, 4)),
        on_parameters(lambda x: log_softmax(x, axis=0)),
    ),
    Case("mean", "mean", normal((2, 3)), on_parameters(lambda x: x.mean())),
    Case("Linear", "Linear", normal((3, 4), (4, 2), (2,)), _linear_layer),
    Case("Linear_bias_free", "Linear", normal((3, 4), (4, 2)), _bias_free_linear_layer),
    Case(
        "conv2d_bias_free",
        "conv2d",
        normal((2, 2, 4, 5), (3, 2, 3, 3)),
        on_parameters(lambda x, w: conv2d(x, w, None, stride=1, padding=1)),
    ),
    Case(
        "conv2d_max_pool_bias_free",
        "conv2d_max_pool",
        normal((2, 2, 4, 4), (3, 2, 3, 3)),
        on_parameters(lambda x, w: conv2d_max_pool(x, w, None, stride=1, padding=1, pool=2)),
    ),
    Case(
        "Conv2d_layer_bias_free",
        "conv2d",
        normal((2, 2, 4, 5), (3, 2, 3, 3)),
        _bias_free_conv_layer,
    ),
]


def quarter(*shapes) -> Draw:
    """Standard normal values over 4: Winograd's transforms multiply by up to 64, and the
    loss's size is what rounds a finite difference."""
    return lambda rng: [rng.standard_normal(shape) / 4 for shape in shapes]


WINOGRAD_COMPOSITE_CASES: list[Case] = [
    Case(
        "conv2d_winograd",
        "conv2d",
        quarter((2, 2, 4, 8), (3, 2, 3, 3), (3,)),
        on_parameters(lambda x, w, b: conv2d(x, w, b, 1, 1, algorithm="winograd")),
    ),
    Case(
        "conv2d_max_pool_winograd",
        "conv2d_max_pool",
        quarter((2, 2, 8, 4), (3, 2, 3, 3), (3,)),
        on_parameters(lambda x, w, b: conv2d_max_pool(x, w, b, 1, 1, 2, algorithm="winograd")),
    ),
    Case(
        "conv2d_max_pool_winograd_pool4",
        "conv2d_max_pool",
        quarter((1, 2, 8, 8), (2, 2, 3, 3)),
        on_parameters(lambda x, w: conv2d_max_pool(x, w, None, 1, 1, 4, algorithm="winograd")),
    ),
]
COMPOSITE_CASES += WINOGRAD_COMPOSITE_CASES


def _layer_norm_module(tape: Tape, tensors: list[Tensor]):
    rows = tape.parameter(tensors[0])
    layer = LayerNorm(tape, 4, name="ln", dtype=tape.dtype)
    # Its weight and bias start at 1 and 0; `layer_norm`'s case moves them.
    return layer.express(rows), [rows.symbol]


def _embedding_module(tape: Tape, tensors: list[Tensor]):
    tokens = tape.input(Indices.of(TOKENS, 5))
    layer = Embedding(tape, tensors[0], name="tokens")
    return layer.express(tokens), [layer.table]


def _attention(tape: Tape, tensors: list[Tensor]):
    rows = tape.parameter(tensors[0])
    qkv = Linear(tape, tensors[1], tensors[2], name="attention.qkv")
    projection = Linear(tape, tensors[3], tensors[4], name="attention.projection")
    output = causal_self_attention(rows, qkv, projection, heads=2)
    return output, [rows.symbol, *qkv.parameters(), *projection.parameters()]


def _class_index_cross_entropy(tape: Tape, tensors: list[Tensor]):
    logits = tape.parameter(tensors[0])
    targets = tape.input(Indices.of(TOKENS, 5))
    return cross_entropy(logits, targets), [logits.symbol]


def _linear_of_gelu(tape: Tape, tensors: list[Tensor]):
    rows = tape.parameter(tensors[0])
    layer = Linear(tape, tensors[1], tensors[2], name="project")
    return layer.express_gelu(rows), [rows.symbol, layer.weights, layer.bias]


def _linear_over_rank3(tape: Tape, tensors: list[Tensor]):
    rows = tape.parameter(tensors[0])
    layer = Linear(tape, tensors[1], tensors[2], name="layer")
    return layer.express(rows), [rows.symbol, layer.weights, layer.bias]


TRANSFORMER_COMPOSITE_CASES: list[Case] = [
    Case(
        "layer_norm",
        "layer_norm",
        normal((2, 3, 4), (4,), (4,)),
        on_parameters(lambda x, w, b: layer_norm(x, w, b)),
    ),
    Case("LayerNorm_layer", "layer_norm", normal((3, 4)), _layer_norm_module),
    Case("gelu_function", "gelu", normal((2, 3)), on_parameters(lambda a: gelu(a))),
    Case("Embedding_layer", "embedding", normal((5, 3)), _embedding_module),
    Case(
        "causal_self_attention",
        "causal_self_attention",
        normal((2, 3, 4), (4, 12), (12,), (4, 4), (4,)),
        _attention,
    ),
    Case(
        "cross_entropy_class_indices",
        "cross_entropy",
        normal((2, 4, 5)),
        _class_index_cross_entropy,
    ),
    Case(
        "mean_last_axis_keepdims",
        "mean",
        normal((2, 3, 4)),
        on_parameters(lambda x: x - x.mean(-1, keepdims=True)),
    ),
    Case(
        "sum_axes",
        "sum",
        normal((2, 3, 4)),
        on_parameters(lambda x: x.sum((0, 2)) * x.sum(1, keepdim=True).sum()),
    ),
    Case(
        "reshape_inferred",
        "reshape",
        normal((2, 3, 4)),
        on_parameters(lambda x: x.reshape(-1) * x.reshape(3, -1).reshape(-1)),
    ),
    Case("Linear_of_gelu", "Linear", normal((3, 4), (4, 2), (2,)), _linear_of_gelu),
    Case(
        "Linear_rank3",
        "Linear",
        normal((2, 3, 4), (4, 2), (2,)),
        _linear_over_rank3,
    ),
]

COMPOSITE_CASES += TRANSFORMER_COMPOSITE_CASES

ALL_CASES = PRIMITIVE_CASES + COMPOSITE_CASES

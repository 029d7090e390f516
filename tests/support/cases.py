"""The table of differentiable cases: one or more per registered primitive, and the
composites. Each case says which operation it is about (`subject`), how to draw its
parameter values (kept away from kinks: relu, heaviside, abs and maximum inputs away from 0
and from ties; ln, sqrt and divisors positive) and how to record it.

A new primitive must bring its own case here: `test_every_primitive_has_a_case`
fails until it does.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
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
    Value,
    causal_self_attention,
    conv2d,
    conv2d_max_pool,
    cross_entropy,
    embedding,
    gelu,
    layer_norm,
    max_pool,
)
from topos.nn.loss import log_softmax, softmax
from topos.ops import REGISTRY
from topos.ops.patch_window import PatchWindow

Draw = Callable[[np.random.Generator], list[np.ndarray]]


@dataclass(frozen=True)
class Case:
    """One expression to differentiate."""

    name: str
    subject: str
    draw: Draw
    build: Build

    @property
    def seed(self) -> int:
        """A seed fixed by the case's name, for its values and its output weighting."""
        return zlib.crc32(self.name.encode())

    def arrays(self) -> list[np.ndarray]:
        """The case's float64 parameter values."""
        return self.draw(np.random.default_rng(self.seed))

    def __repr__(self) -> str:
        return self.name


def on_parameters(express: Callable[..., Value]) -> Build:
    """A build that records every tensor as a parameter and applies `express` to them."""

    def build(tape: Tape, tensors: list[Tensor]):
        values = [tape.parameter(tensor) for tensor in tensors]
        return express(*values), [value.symbol for value in values]

    return build


# Drawing values -------------------------------------------------------------------------


def normal(*shapes) -> Draw:
    """Standard normal values."""
    return lambda rng: [rng.standard_normal(shape) for shape in shapes]


def positive(*shapes) -> Draw:
    """Values in [0.5, 2): safe for ln, sqrt and as divisors."""
    return lambda rng: [rng.uniform(0.5, 2.0, shape) for shape in shapes]


def away_from_zero(*shapes) -> Draw:
    """Values of either sign whose magnitude lies in [0.25, 1.5): no relu or heaviside kink."""
    return lambda rng: [
        rng.choice([-1.0, 1.0], shape) * rng.uniform(0.25, 1.5, shape) for shape in shapes
    ]


def apart(shape, other_shape=None) -> Draw:
    """Two operands that differ by at least 0.25 everywhere: no maximum tie."""

    def draw(rng):
        if other_shape is None:
            first = rng.standard_normal(shape)
            gap = rng.choice([-1.0, 1.0], shape) * rng.uniform(0.25, 1.0, shape)
            return [first, first + gap]
        scalar = rng.standard_normal(other_shape)
        gap = rng.choice([-1.0, 1.0], shape) * rng.uniform(0.25, 1.0, shape)
        return [scalar + gap, scalar]

    return draw


def distinct(shape) -> Draw:
    """A shuffled ladder of values 0.25 apart: no two equal, so max pooling has no tie."""
    return lambda rng: [rng.permutation(int(np.prod(shape))).reshape(shape) * 0.25 - 2.0]


def both(first: Draw, second: Draw) -> Draw:
    """The values of `first` followed by those of `second`."""
    return lambda rng: first(rng) + second(rng)


# Primitives -------------------------------------------------------------------------------


def _scatter(value: Value) -> Value:
    return value.tape.record("scatter", (value,), axis=1, indices=(0, 2, 2, 1), length=3)


PRIMITIVE_CASES: list[Case] = [
    Case("add", "add", normal((2, 3), (2, 3)), on_parameters(lambda a, b: a + b)),
    Case("add_scalar_right", "add", normal((2, 3), ()), on_parameters(lambda a, b: a + b)),
    Case("add_scalar_left", "add", normal((), (2, 3)), on_parameters(lambda a, b: a + b)),
    Case("sub", "sub", normal((2, 3), (2, 3)), on_parameters(lambda a, b: a - b)),
    Case("sub_scalar_right", "sub", normal((2, 3), ()), on_parameters(lambda a, b: a - b)),
    Case("sub_scalar_left", "sub", normal((), (2, 3)), on_parameters(lambda a, b: a - b)),
    Case("mul", "mul", normal((2, 3), (2, 3)), on_parameters(lambda a, b: a * b)),
    Case("mul_scalar_right", "mul", normal((2, 3), ()), on_parameters(lambda a, b: a * b)),
    Case("mul_scalar_left", "mul", normal((), (2, 3)), on_parameters(lambda a, b: a * b)),
    Case("mul_square", "mul", normal((2, 3)), on_parameters(lambda a: a * a)),
    Case("div", "div", both(normal((2, 3)), positive((2, 3))), on_parameters(lambda a, b: a / b)),
    Case(
        "div_scalar_right",
        "div",
        both(normal((2, 3)), positive(())),
        on_parameters(lambda a, b: a / b),
    ),
    Case(
        "div_scalar_left",
        "div",
        both(normal(()), positive((2, 3))),
        on_parameters(lambda a, b: a / b),
    ),
    Case("neg", "neg", normal((2, 3)), on_parameters(lambda a: -a)),
    Case("exp", "exp", normal((2, 3)), on_parameters(lambda a: a.exp())),
    Case("ln", "ln", positive((2, 3)), on_parameters(lambda a: a.ln())),
    Case("sqrt", "sqrt", positive((2, 3)), on_parameters(lambda a: a.sqrt())),
    Case("tanh", "tanh", normal((2, 3)), on_parameters(lambda a: a.tanh())),
    Case("relu", "relu", away_from_zero((3, 4)), on_parameters(lambda a: a.relu())),
    Case("abs", "abs", away_from_zero((3, 4)), on_parameters(lambda a: a.abs())),
    Case(
        "heaviside",
        "heaviside",
        away_from_zero((3, 4)),
        on_parameters(lambda a: a.heaviside() * a),
    ),
    Case("maximum", "maximum", apart((3, 4)), on_parameters(lambda a, b: a.maximum(b))),
    Case(
        "maximum_scalar_right",
        "maximum",
        apart((3, 4), ()),
        on_parameters(lambda a, b: a.maximum(b)),
    ),
    Case(
        "maximum_scalar_left",
        "maximum",
        apart((3, 4), ()),
        on_parameters(lambda a, b: b.maximum(a)),
    ),
    Case("matmul", "matmul", normal((3, 4), (4, 2)), on_parameters(lambda a, b: a @ b)),
    Case(
        "matmul_batched", "matmul", normal((2, 3, 4), (2, 4, 2)), on_parameters(lambda a, b: a @ b)
    ),
    Case("permute", "permute", normal((2, 3, 4)), on_parameters(lambda a: a.permute(2, 0, 1))),
    Case("transpose", "permute", normal((3, 4)), on_parameters(lambda a: a.T)),
    Case("reshape", "reshape", normal((2, 3, 4)), on_parameters(lambda a: a.reshape(4, 6))),
    Case("sum", "sum", normal((2, 3)), on_parameters(lambda a: a.sum())),
    Case("expand", "expand", normal(()), on_parameters(lambda a: a.expand(2, 3))),
    Case("sum_along", "sum_along", normal((2, 3, 4)), on_parameters(lambda a: a.sum_along(1))),
    Case(
        "broadcast_along",
        "broadcast_along",
        normal((2, 4)),
        on_parameters(lambda a: a.broadcast_along(1, 3)),
    ),
    Case("logsumexp", "logsumexp", normal((3, 4)), on_parameters(lambda a: a.logsumexp(1))),
    Case("logsumexp_axis0", "logsumexp", normal((3, 4)), on_parameters(lambda a: a.logsumexp(0))),
    Case("pad", "pad", normal((2, 3)), on_parameters(lambda a: a.pad(((1, 0), (0, 2))))),
    Case("narrow", "narrow", normal((3, 5)), on_parameters(lambda a: a.narrow(1, 1, 3))),
    Case("unfold", "unfold", normal((2, 7)), on_parameters(lambda a: a.unfold(1, 3, 1))),
    Case("unfold_stride2", "unfold", normal((2, 7)), on_parameters(lambda a: a.unfold(1, 3, 2))),
    Case(
        "unfold_stride2_remainder",
        "unfold",
        normal((2, 6)),
        on_parameters(lambda a: a.unfold(1, 3, 2)),
    ),
    Case("fold", "fold", normal((2, 4, 3)), on_parameters(lambda a: a.fold(1, 6, 1))),
    Case("fold_stride2", "fold", normal((2, 3, 2)), on_parameters(lambda a: a.fold(1, 6, 2))),
    Case("gather", "gather", normal((3, 4)), on_parameters(lambda a: a.gather(1, (2, 0, 2, 1)))),
    Case("scatter", "scatter", normal((2, 4)), on_parameters(_scatter)),
]

# The fused primitives (conv2d and max_pool record them) -------------------------------


def _record(name: str, *operands, **attributes):
    """Records primitive `name` directly (no Value method records these)."""
    return operands[0].tape.record(name, operands, **attributes)


def _gradient_of(name: str):
    """Records primitive `name` over its operands (the gradient kernels have no method)."""
    return lambda *operands, **attributes: _record(name, *operands, **attributes)


def window(kernel_height=3, kernel_width=3, stride=1, padding=1, phases=1) -> dict:
    """The window attribute of im2col, col2im, convolution and convolution_images."""
    return {"window": PatchWindow(kernel_height, kernel_width, stride, padding, phases)}


def with_phases(attributes: dict, phases: int) -> dict:
    """`attributes` with their window's rows taken in `phases` phases."""
    return {**attributes, "window": replace(attributes["window"], phases=phases)}


def _im2col_case(name, shape, **attributes) -> Case:
    return Case(
        name, "im2col", normal(shape), on_parameters(lambda x: _record("im2col", x, **attributes))
    )


def _col2im_case(name, shape, **attributes) -> Case:
    rows = Tape().input(Tensor.filled(shape, 0.0))
    patches = REGISTRY["im2col"].infer(rows.shape, **attributes)
    return Case(
        name,
        "col2im",
        normal(tuple(patches)),
        on_parameters(lambda p: _record("col2im", p, shape=shape, **attributes)),
    )


def _max_pool_case(name: str, shape, size: int, stride: int) -> Case:
    """max_pool over distinct values (no ties, so every window has one winner)."""
    return Case(
        name,
        "max_pool",
        distinct(shape),
        on_parameters(lambda x: _record("max_pool", x, size=size, stride=stride)),
    )


def _recorded_case(name: str, subject: str, draw: Draw) -> Case:
    """Primitive `subject` recorded over the operands `draw` gives (and its attributes none)."""
    return Case(name, subject, draw, on_parameters(_gradient_of(subject)))


def _pool_with_fixed_input(name: str, subject: str, shape, size: int, stride: int) -> Case:
    """route and pick are flat in the pooled input (winners are piecewise constant), so
    the input is a fixed leaf of distinct values and only the gradient operand varies."""
    fixed = distinct(shape)(np.random.default_rng(7))[0]
    pooled = REGISTRY["max_pool"].infer(Tensor(shape, fixed).shape, size=size, stride=stride)
    varying = tuple(pooled) if subject == "max_pool_route" else shape

    def build(tape: Tape, tensors):
        operand = tape.leaf(Tensor(shape, fixed, dtype=tape.dtype))
        values = tape.parameter(tensors[0])
        output = tape.record(subject, (operand, values), size=size, stride=stride)
        return output, [values.symbol]

    return Case(name, subject, normal(varying), build)


FUSED_CASES: list[Case] = [
    _im2col_case("im2col_3x3_same", (2, 2, 4, 5), **window()),
    _im2col_case("im2col_stride2", (1, 3, 5, 6), **window(stride=2, padding=1)),
    _im2col_case("im2col_2x3_valid", (2, 2, 4, 5), **window(2, 3, 1, 0)),
    _col2im_case("col2im_3x3_same", (2, 2, 4, 5), **window()),
    _col2im_case("col2im_stride2", (1, 3, 5, 6), **window(stride=2, padding=1)),
    _col2im_case("col2im_2x3_valid", (2, 2, 4, 5), **window(2, 3, 1, 0)),
    _max_pool_case("max_pool_fused_2x2", (2, 3, 4, 6), size=2, stride=2),
    _max_pool_case("max_pool_fused_3x3_stride2", (1, 2, 5, 5), size=3, stride=2),
    _pool_with_fixed_input("max_pool_route_2x2", "max_pool_route", (2, 3, 4, 6), 2, 2),
    _pool_with_fixed_input("max_pool_route_2x2_stride1", "max_pool_route", (1, 2, 4, 5), 2, 1),
    _pool_with_fixed_input("max_pool_pick_2x2", "max_pool_pick", (2, 3, 4, 6), 2, 2),
    _pool_with_fixed_input("max_pool_pick_3x3_stride2", "max_pool_pick", (1, 2, 5, 5), 3, 2),
    _recorded_case("matmul_nt", "matmul_nt", normal((3, 4), (2, 4))),
    _recorded_case("matmul_nt_batched", "matmul_nt", normal((2, 3, 4), (2, 5, 4))),
    _recorded_case("matmul_tn", "matmul_tn", normal((4, 3), (4, 2))),
    _recorded_case("matmul_tn_batched", "matmul_tn", normal((2, 4, 3), (2, 4, 5))),
]

PRIMITIVE_CASES += FUSED_CASES

# Phase-major patch rows and the lane maximum (conv2d_max_pool records them) -------------
#
# Kept apart from FUSED_CASES, whose subjects test_fused_kernels pins to its own list.


def _winners(x: Value, axes) -> Value:
    """lane_argmax recorded from `x`: the winners lane_max, lane_place and lane_select
    take (lane_max's must be lane_argmax of its own operand)."""
    return _record("lane_argmax", x, axes=tuple(axes))


def _lane_max_case(name: str, shape, axes=(0,)) -> Case:
    """lane_max over lanes of distinct values, its winners found in the graph from the
    same operand: no tie for finite differences to straddle, so the winners (piecewise
    constant: lane_argmax has no derivative rule and lane_max sends it nothing) stay put."""

    def express(x: Value) -> Value:
        return _record("lane_max", x, _winners(x, axes), axes=tuple(axes))

    return Case(name, "lane_max", distinct(shape), on_parameters(express))


def _lane_argmax_case(name: str, shape, axes=(0,)) -> Case:
    """lane_argmax has no derivative rule: its subject is that a gradient flowing past
    it (`lane_select(tanh(x), lane_argmax(x))`: the sweep visits the argmax, which
    depends on x, and sends it nothing) matches finite differences, which see the
    winners as the constants they are away from ties."""

    def express(x: Value) -> Value:
        return _record("lane_select", x.tanh(), _winners(x, axes), axes=tuple(axes))

    return Case(name, "lane_argmax", distinct(shape), on_parameters(express))


def _lanes_with_fixed_input(name: str, subject: str, shape, axes=(0,)) -> Case:
    """As `_pool_with_fixed_input`, for lane_place and lane_select: the winners are
    lane_argmax of a fixed leaf of distinct values (no tie), only the other operand
    varies: the gradient `[lane shape]` of lane_place, the values `shape` of lane_select."""
    fixed = distinct(shape)(np.random.default_rng(7))[0]
    axes = tuple(axes)
    lane = tuple(extent for axis, extent in enumerate(shape) if axis not in axes)
    extents = tuple(shape[axis] for axis in axes)
    varying = lane if subject == "lane_place" else tuple(shape)

    def build(tape: Tape, tensors):
        winners = _winners(tape.leaf(Tensor(shape, fixed, dtype=tape.dtype)), axes)
        values = tape.parameter(tensors[0])
        if subject == "lane_place":
            output = tape.record(subject, (winners, values), axes=axes, extents=extents)
        else:
            output = tape.record(subject, (values, winners), axes=axes)
        return output, [values.symbol]

    return Case(name, subject, normal(varying), build)


PHASED_CASES: list[Case] = [
    _im2col_case("im2col_3x3_same_phases2", (2, 2, 4, 4), **window(phases=2)),
    _im2col_case("im2col_stride2_phases2", (1, 3, 7, 7), **window(stride=2, phases=2)),
    _im2col_case("im2col_3x3_same_phases3", (1, 2, 6, 6), **window(phases=3)),
    _im2col_case("im2col_2x3_valid_phases2", (1, 2, 5, 6), **window(2, 3, 1, 0, phases=2)),
    _col2im_case("col2im_3x3_same_phases2", (2, 2, 4, 4), **window(phases=2)),
    _col2im_case("col2im_stride2_phases2", (1, 3, 7, 7), **window(stride=2, phases=2)),
    _col2im_case("col2im_3x3_same_phases3", (1, 2, 6, 6), **window(phases=3)),
    _col2im_case("col2im_2x3_valid_phases2", (1, 2, 5, 6), **window(2, 3, 1, 0, phases=2)),
    _lane_argmax_case("lane_argmax_4_lanes", (4, 3, 2)),
    _lane_argmax_case("lane_argmax_pooling_axes", (1, 2, 2, 2, 2, 3), axes=(2, 4)),
    _lane_max_case("lane_max_1_lane", (1, 3, 2)),
    _lane_max_case("lane_max_2_lanes", (2, 3, 4)),
    _lane_max_case("lane_max_4_lanes", (4, 5, 3)),
    _lane_max_case("lane_max_4_lanes_rank3", (4, 2, 3, 2)),
    _lane_max_case("lane_max_9_lanes_rank1", (9, 4)),
    _lane_max_case("lane_max_5_lanes_rank0", (5,)),
    _lane_max_case("lane_max_middle_axis", (3, 4, 2), axes=(1,)),
    _lane_max_case("lane_max_middle_axis_1_lane", (2, 1, 3), axes=(1,)),
    _lane_max_case("lane_max_pooling_axes", (2, 2, 2, 3, 2, 3), axes=(2, 4)),
    _lanes_with_fixed_input("lane_place_2_lanes", "lane_place", (2, 3, 4)),
    _lanes_with_fixed_input("lane_place_4_lanes_rank3", "lane_place", (4, 2, 3, 2)),
    _lanes_with_fixed_input("lane_place_last_axis", "lane_place", (3, 2, 5), axes=(2,)),
    _lanes_with_fixed_input(
        "lane_place_pooling_axes", "lane_place", (2, 2, 2, 1, 2, 3), axes=(2, 4)
    ),
    _lanes_with_fixed_input("lane_select_2_lanes", "lane_select", (2, 3, 4)),
    _lanes_with_fixed_input("lane_select_4_lanes_rank3", "lane_select", (4, 2, 3, 2)),
    _lanes_with_fixed_input("lane_select_last_axis", "lane_select", (3, 2, 5), axes=(2,)),
    _lanes_with_fixed_input(
        "lane_select_pooling_axes", "lane_select", (2, 2, 2, 1, 2, 3), axes=(2, 4)
    ),
]

PRIMITIVE_CASES += PHASED_CASES


# The convolution's product and its images' gradient --------------------------------------


def _convolution_case(name, shape, filters, **attributes) -> Case:
    """The product over `im2col(images)` recorded with the images, both varying."""
    depth = REGISTRY["im2col"].infer(Tape().input(Tensor.filled(shape, 0.0)).shape, **attributes)[1]

    def express(images, kernel):
        patches = _record("im2col", images, **attributes)
        return images.tape.record("convolution", (patches, kernel, images), **attributes)

    return Case(name, "convolution", normal(shape, (depth, filters)), on_parameters(express))


def _convolution_images_case(name, shape, filters, **attributes) -> Case:
    rows, depth = REGISTRY["im2col"].infer(
        Tape().input(Tensor.filled(shape, 0.0)).shape, **attributes
    )
    return Case(
        name,
        "convolution_images",
        normal((rows, filters), (depth, filters)),
        on_parameters(
            lambda g, k: g.tape.record("convolution_images", (g, k), shape=shape, **attributes)
        ),
    )


CONVOLUTION_CASES: list[Case] = [
    _convolution_case("convolution_3x3_same", (2, 2, 4, 5), 3, **window()),
    _convolution_case("convolution_stride2", (1, 3, 5, 6), 2, **window(stride=2, padding=1)),
    _convolution_case("convolution_phases2", (2, 2, 4, 4), 3, **window(phases=2)),
    _convolution_images_case("convolution_images_3x3_same", (2, 2, 4, 5), 3, **window()),
    _convolution_images_case("convolution_images_2x3_valid", (2, 3, 4, 5), 2, **window(2, 3, 1, 0)),
    _convolution_images_case(
        "convolution_images_stride2", (1, 3, 5, 6), 2, **window(stride=2, padding=1)
    ),
    _convolution_images_case("convolution_images_phases2", (2, 2, 4, 4), 3, **window(phases=2)),
]
PRIMITIVE_CASES += CONVOLUTION_CASES


# Winograd F(4x4, 3x3)'s tile transforms (conv2d records them with algorithm="winograd") ---


def _winograd_case(name, subject, operand, **attributes) -> Case:
    """One Winograd transform over a varying operand of shape `operand`, drawn small: the
    transforms multiply by up to 64, and the loss's size is what rounds a finite
    difference."""

    def draw(rng):
        return [rng.standard_normal(operand) / 16]

    return Case(name, subject, draw, on_parameters(lambda a: _record(subject, a, **attributes)))


WINOGRAD_CASES: list[Case] = [
    _winograd_case("winograd_input", "winograd_input", (2, 2, 4, 8), **window()),
    _winograd_case(
        "winograd_input_adjoint",
        "winograd_input_adjoint",
        (36, 4, 2),
        shape=(2, 2, 4, 8),
        **window(),
    ),
    _winograd_case("winograd_output", "winograd_output", (36, 4, 3), pixels=(2, 8, 4), **window()),
    _winograd_case(
        "winograd_output_phases2",
        "winograd_output",
        (36, 4, 3),
        pixels=(1, 8, 8),
        **window(phases=2),
    ),
    _winograd_case(
        "winograd_output_adjoint_phases4",
        "winograd_output_adjoint",
        (64, 3),
        pixels=(1, 8, 8),
        **window(phases=4),
    ),
    _winograd_case(
        "winograd_output_adjoint",
        "winograd_output_adjoint",
        (32, 2),
        pixels=(2, 4, 4),
        **window(),
    ),
]
PRIMITIVE_CASES += WINOGRAD_CASES

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


# Broadcasting, index inputs and the transformer's primitives ----------------------------

#: Fixed token ids (and class indices) below 5: repeats included, so gradient rows add up.
TOKENS = np.array([[3, 0, 4, 0], [1, 3, 3, 2]])


def on_indices(express: Callable[..., Value], indices=TOKENS, classes: int = 5) -> Build:
    """A build that records fixed `indices` as an index input (fed by its default) and
    every tensor as a parameter, and applies `express(indices, *parameters)`."""

    def build(tape: Tape, tensors: list[Tensor]):
        index_input = tape.input(Indices.of(indices, classes))
        values = [tape.parameter(tensor) for tensor in tensors]
        return express(index_input, *values), [value.symbol for value in values]

    return build


def probabilities(shape, causal: bool = False) -> Draw:
    """Softmax rows of normal scores (causal: zero above the diagonal), then normal values."""

    def draw(rng):
        scores = rng.standard_normal(shape)
        if causal:
            scores = np.where(np.tri(shape[-1], dtype=bool), scores, -np.inf)
        exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return [exponentials / exponentials.sum(axis=-1, keepdims=True), rng.standard_normal(shape)]

    return draw


TRANSFORMER_CASES: list[Case] = [
    Case(
        "add_broadcast_row",
        "add",
        normal((2, 3, 4), (4,)),
        on_parameters(lambda a, b: a + b),
    ),
    Case(
        "add_broadcast_row_left",
        "add",
        normal((3, 4), (2, 3, 4)),
        on_parameters(lambda a, b: a + b),
    ),
    Case(
        "sub_broadcast_keepdims",
        "sub",
        normal((2, 3, 4), (2, 3, 1)),
        on_parameters(lambda a, b: a - b),
    ),
    Case(
        "mul_broadcast_both",
        "mul",
        normal((2, 1, 4), (3, 1)),
        on_parameters(lambda a, b: a * b),
    ),
    Case(
        "div_broadcast",
        "div",
        both(normal((2, 3, 4)), positive((3, 1))),
        on_parameters(lambda a, b: a / b),
    ),
    Case(
        "maximum_broadcast",
        "maximum",
        apart((2, 3), (3,)),
        on_parameters(lambda a, b: a.maximum(b)),
    ),
    Case(
        "sum_to_rows",
        "sum_to",
        normal((2, 3, 4)),
        on_parameters(lambda a: _record("sum_to", a, shape=(4,))),
    ),
    Case(
        "sum_to_keepdims",
        "sum_to",
        normal((2, 3, 4)),
        on_parameters(lambda a: _record("sum_to", a, shape=(2, 1, 4))),
    ),
    Case(
        "sum_to_mixed",
        "sum_to",
        normal((2, 3, 4)),
        on_parameters(lambda a: _record("sum_to", a, shape=(3, 1))),
    ),
    Case(
        "broadcast_to",
        "broadcast_to",
        normal((3, 1)),
        on_parameters(lambda a: a.broadcast_to(2, 3, 4)),
    ),
    Case("power_square", "power", normal((2, 3)), on_parameters(lambda a: a**2)),
    Case("power_cube", "power", normal((2, 3)), on_parameters(lambda a: a**3)),
    Case("power_inverse_root", "power", positive((2, 3)), on_parameters(lambda a: a**-0.5)),
    Case("power_one", "power", normal((2, 3)), on_parameters(lambda a: a**1)),
    Case(
        "embedding",
        "embedding",
        normal((5, 3)),
        on_indices(lambda tokens, table: embedding(table, tokens)),
    ),
    Case(
        "embedding_gradient",
        "embedding_gradient",
        normal((2, 4, 3)),
        on_indices(lambda tokens, rows: _record("embedding_gradient", rows, tokens, rows=6)),
    ),
    Case(
        "pick_class",
        "pick_class",
        normal((2, 4, 5)),
        on_indices(lambda targets, logits: _record("pick_class", logits, targets)),
    ),
    Case(
        "place_class",
        "place_class",
        normal((2, 4)),
        on_indices(lambda targets, values: _record("place_class", values, targets, classes=5)),
    ),
    Case(
        "softmax",
        "softmax",
        normal((2, 3, 4)),
        on_parameters(lambda a: _record("softmax", a, causal=False)),
    ),
    Case(
        "softmax_causal",
        "softmax",
        normal((2, 4, 4)),
        on_parameters(lambda a: _record("softmax", a, causal=True)),
    ),
    _recorded_case("softmax_gradient", "softmax_gradient", probabilities((2, 3, 4))),
    _recorded_case(
        "softmax_gradient_causal", "softmax_gradient", probabilities((2, 4, 4), causal=True)
    ),
    Case(
        "row_scale",
        "row_scale",
        normal((3, 5)),
        on_parameters(lambda a: _record("row_scale", a, eps=1e-5)),
    ),
    Case(
        "row_scale_rank3",
        "row_scale",
        normal((2, 3, 4)),
        on_parameters(lambda a: _record("row_scale", a, eps=0.1)),
    ),
    Case(
        "standardize",
        "standardize",
        normal((3, 5)),
        on_parameters(lambda a: _record("standardize", a, _record("row_scale", a, eps=1e-5))),
    ),
    Case(
        "standardize_rank3",
        "standardize",
        normal((2, 3, 4)),
        on_parameters(lambda a: _record("standardize", a, _record("row_scale", a, eps=0.1))),
    ),
    Case(
        "standardize_gradient",
        "standardize_gradient",
        both(normal((3, 5), (3, 5)), positive((3, 1))),
        on_parameters(lambda x, g, s: _record("standardize_gradient", x, g, s)),
    ),
    Case("gelu", "gelu", normal((3, 4)), on_parameters(lambda a: a.gelu())),
    _recorded_case("gelu_product", "gelu_product", normal((3, 4), (4, 2))),
    _recorded_case(
        "gelu_product_gradient", "gelu_product_gradient", normal((3, 4), (3, 2), (4, 2))
    ),
    _recorded_case("gelu_product_weights", "gelu_product_weights", normal((3, 4), (3, 2))),
    _recorded_case("gelu_gradient", "gelu_gradient", normal((3, 4), (3, 4))),
]

PRIMITIVE_CASES += TRANSFORMER_CASES


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

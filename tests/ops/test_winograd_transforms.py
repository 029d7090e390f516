"""Winograd F(4x4, 3x3): the product its transforms make is the direct convolution's, to
1e-10 in float64 and to about ten times the direct form's rounding in float32; its
gradients are the direct form's; its kernels' bits are fixed by the shapes (never by
an operand's, the output's or the workspace's layout); a shape it cannot compute is
refused in one line naming it; and `Conv2d` uses it only where it was asked for, applies
and pays. (Its derivative rules against finite differences, and the routes' bits: the
examples the transforms declare, run by test_derivatives and test_route_parity.)"""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.cases import window
from topos import Conv2d, ShapeError, Tape, Tensor, conv2d, conv2d_max_pool
from topos.ops import REGISTRY
from topos.ops.primitives.winograd_transforms import KERNEL_PRODUCT
from topos.tensor import Shape

kernel = {name: REGISTRY[name].kernel for name in REGISTRY}

SHAPES = [
    # (images [N, C, H, W], filters, phases)
    ((2, 3, 4, 8), 4, 1),
    ((2, 16, 16, 16), 8, 2),
    ((1, 32, 8, 8), 16, 2),
    ((1, 5, 8, 12), 3, 4),
]


def operands(shape, filters, dtype=np.float64):
    """Rectified images (as a relu gives them) and a kernel matrix drawn as ConvNet's."""
    rng = np.random.default_rng(sum(shape) + filters)
    images = np.maximum(rng.standard_normal(shape), 0).astype(dtype)
    depth = 9 * shape[1]
    weights = (rng.standard_normal((depth, filters)) * np.sqrt(2 / depth)).astype(dtype)
    return images, weights


def direct(images, weights, phases):
    attributes = window(phases=phases)
    patches = kernel["im2col"](images, **attributes)
    return kernel["convolution"](patches, weights, images, **attributes)


def winograd(images, weights, phases):
    """The product as `winograd_product` records it, kernel by kernel."""
    batch, channels, height, width = images.shape
    filters = weights.shape[1]
    attributes = window(phases=phases)
    tiles = kernel["winograd_input"](images, **attributes)
    transform = KERNEL_PRODUCT.astype(images.dtype)
    transformed = (transform @ weights.reshape(9, channels * filters)).reshape(36, channels, -1)
    products = np.matmul(tiles, transformed)
    return kernel["winograd_output"](products, pixels=(batch, height, width), **attributes)


def relative(result, reference) -> float:
    return float(np.abs(result - reference).max() / np.abs(reference).max())


@pytest.mark.parametrize(("shape", "filters", "phases"), SHAPES, ids=str)
def test_the_product_is_the_direct_convolution(shape, filters, phases):
    images, weights = operands(shape, filters)
    reference = direct(images, weights, phases)
    assert relative(winograd(images, weights, phases), reference) < 1e-10
    # float32: some ten times the direct form's rounding, as the README says (4e-6 and
    # 5e-6 at cifar10's second and third layers, where direct float32 is 4e-7).
    single = winograd(images.astype(np.float32), weights.astype(np.float32), phases)
    direct_single = direct(images.astype(np.float32), weights.astype(np.float32), phases)
    assert single.dtype == np.float32
    assert relative(single, reference) < 2e-5
    assert relative(direct_single, reference) < 2e-6


def gradients(images, weights, algorithm, dtype=np.float64):
    """The loss `sum(conv2d_max_pool(images, weights) * fixed)` and its gradients in the
    images and the weights, by the recorded route."""
    tape = Tape(dtype=dtype)
    x = tape.parameter(Tensor(images.shape, images, dtype=dtype))
    w = tape.parameter(Tensor(weights.shape, weights, dtype=dtype))
    pooled = conv2d_max_pool(x, w, None, 1, 1, 2, algorithm=algorithm)
    fixed = np.random.default_rng(3).standard_normal(tuple(pooled.shape))
    loss = (pooled * tape.leaf(Tensor(pooled.shape, fixed, dtype=dtype))).sum()
    adjoints = tape.differentiate(loss, [x, w])
    network = tape.into_network()
    parameters = network.parameters()
    run = network.entry(adjoints.roots()).lower().forward(parameters)
    found = run.recorded_gradients(adjoints)
    return [found.of(symbol).numpy() for symbol in (x.symbol, w.symbol)]


def test_the_gradients_are_the_direct_forms():
    rng = np.random.default_rng(5)
    images = rng.standard_normal((2, 16, 8, 8))
    weights = rng.standard_normal((4, 16, 3, 3)) * np.sqrt(2 / 144)
    for found, expected in zip(
        gradients(images, weights, "winograd"), gradients(images, weights, "direct")
    ):
        assert relative(found, expected) < 1e-10


LAYOUT_CASES = {
    "winograd_input": ((2, 3, 8, 4), {}),
    "winograd_input_adjoint": ((36, 4, 3), {"shape": (2, 3, 8, 4)}),
    "winograd_output": ((36, 4, 5), {"pixels": (2, 4, 8)}),
    "winograd_output_adjoint": ((64, 5), {"pixels": (1, 8, 8)}),
}


@pytest.mark.parametrize("operation", sorted(LAYOUT_CASES))
def test_the_bits_ignore_every_layout(operation):
    shape, attributes = LAYOUT_CASES[operation]
    attributes = {**attributes, **window(phases=2)}
    operand = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    reference = kernel[operation](operand, **attributes)
    primitive = REGISTRY[operation]
    output = primitive.infer(Shape(shape), **attributes)
    size = primitive.memory.workspace(Shape(shape), **attributes)
    out = np.empty(tuple(output), np.float32, order="F")
    result = kernel[operation](
        np.asfortranarray(operand),
        out=out,
        workspace=np.full(size, np.nan, np.float32),
        **attributes,
    )
    assert result is out
    assert np.ascontiguousarray(out).tobytes() == np.ascontiguousarray(reference).tobytes()


@pytest.mark.parametrize(
    ("operation", "shape", "attributes", "fragment"),
    [
        ("winograd_input", (1, 2, 6, 8), window(), "images [1, 2, 6, 8]"),
        ("winograd_input", (1, 2, 8, 8), window(stride=2), "stride=2"),
        ("winograd_input", (1, 2, 8, 8), window(phases=3), "phases=3"),
        (
            "winograd_input_adjoint",
            (36, 3, 2),
            {"shape": (1, 2, 8, 8), **window()},
            "tiles [36, 3, 2] must be [36, 4, 2]",
        ),
        ("winograd_output", (36, 5, 3), {"pixels": (1, 8, 8), **window()}, "products [36, 5, 3]"),
        ("winograd_output_adjoint", (60, 3), {"pixels": (1, 8, 8), **window()}, "rows [60, 3]"),
    ],
)
def test_shapes_it_cannot_compute_are_refused_in_one_line(operation, shape, attributes, fragment):
    with pytest.raises(ShapeError) as caught:
        REGISTRY[operation].infer(Shape(shape), **attributes)
    message = str(caught.value)
    assert message.startswith(operation) and fragment in message and "\n" not in message


def test_conv2d_refuses_winograd_where_it_cannot_apply():
    tape = Tape()
    images = tape.input(Tensor.filled([1, 2, 8, 8], 0.0))
    weights = tape.parameter(Tensor.filled([3, 2, 3, 3], 0.0))
    with pytest.raises(ShapeError) as caught:
        conv2d(images, weights, None, stride=2, padding=1, algorithm="winograd")
    message = str(caught.value)
    assert "conv2d: Winograd" in message and "[1, 2, 8, 8]" in message and "\n" not in message
    with pytest.raises(ValueError, match="algorithm 'fast' is not one of direct, winograd"):
        conv2d(images, weights, algorithm="fast")


def recorded_operations(channels: int, side: int, algorithm: str) -> set[str]:
    tape = Tape()
    images = tape.input(Tensor.filled([2, channels, side, side], 0.0))
    layer = Conv2d(tape, Tensor.filled([4, channels, 3, 3], 0.1), None, 1, 1, algorithm=algorithm)
    layer.express_max_pooled(images, 2)
    return {node.operation for node in tape.nodes}


def test_conv2d_uses_winograd_only_where_asked_for_applies_and_pays():
    assert "winograd_input" in recorded_operations(16, 8, "winograd")
    assert "im2col" not in recorded_operations(16, 8, "winograd")
    assert "winograd_input" not in recorded_operations(16, 8, "direct")  # the default
    assert "winograd_input" not in recorded_operations(3, 8, "winograd")  # too few channels
    assert "winograd_input" not in recorded_operations(16, 6, "winograd")  # 6 is not 4k

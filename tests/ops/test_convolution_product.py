"""The convolution's product and its images' gradient: `convolution` is the patches times
the kernel, bit for bit; `convolution_images` is `col2im(g @ kernel^T)` to rounding
(tap by tap where it can be, the product and col2im elsewhere, bit for bit), its bits
fixed by the shapes (never by the operands' or output's layout), and conv2d records
them so that no col2im runs in a differentiated convolution."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.cases import window
from topos import ShapeError, Tape, Tensor, conv2d
from topos.ops import REGISTRY
from topos.ops.patch_window import PatchWindow
from topos.ops.primitives import convolution_product
from topos.tensor import Shape

kernel = {name: REGISTRY[name].kernel for name in ("convolution", "convolution_images")}
im2col, col2im, matmul_nt = (REGISTRY[name].kernel for name in ("im2col", "col2im", "matmul_nt"))

SHAPES = [
    ((2, 3, 6, 7), 4, window()),
    ((2, 16, 8, 8), 8, window()),
    ((1, 2, 7, 6), 3, window(stride=2, padding=1)),
    ((2, 3, 6, 5), 2, window(2, 3, 1, 0)),
    ((2, 2, 4, 4), 3, window(phases=2)),
]


def operands(shape, filters, attributes):
    rng = np.random.default_rng(sum(shape) + filters)
    rows, depth = REGISTRY["im2col"].infer(Shape(shape), **attributes)
    gradient = rng.standard_normal((rows, filters)).astype(np.float32)
    weights = rng.standard_normal((depth, filters)).astype(np.float32)
    return gradient, weights


@pytest.mark.parametrize(("shape", "filters", "attributes"), SHAPES, ids=str)
def test_the_images_gradient_is_col2im_of_the_product(shape, filters, attributes):
    gradient, weights = operands(shape, filters, attributes)
    result = kernel["convolution_images"](gradient, weights, shape=shape, **attributes)
    reference = col2im(matmul_nt(gradient, weights), shape=shape, **attributes)
    patch_window = attributes["window"]
    same_size = patch_window.stride == 1 and patch_window.output_extents(*shape[2:]) == shape[2:]
    tap_by_tap = same_size or (patch_window.stride == 1 and patch_window.phases == 1)
    if tap_by_tap:
        np.testing.assert_allclose(result, reference, rtol=1e-5, atol=1e-5)
    else:
        assert np.ascontiguousarray(result).tobytes() == np.ascontiguousarray(reference).tobytes()
    exact = col2im(
        gradient.astype(np.float64) @ weights.astype(np.float64).T, shape=shape, **attributes
    )
    np.testing.assert_allclose(result, exact, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("shape", "filters", "attributes"), SHAPES, ids=str)
def test_the_images_gradients_bits_ignore_every_layout(shape, filters, attributes):
    gradient, weights = operands(shape, filters, attributes)
    reference = kernel["convolution_images"](gradient, weights, shape=shape, **attributes)
    expected = np.ascontiguousarray(reference).tobytes()
    out = np.empty(shape, np.float32, order="F")
    shapes = (Shape(gradient.shape), Shape(weights.shape), shape)
    size = REGISTRY["convolution_images"].memory.workspace(*shapes, **attributes)
    scratch = REGISTRY["convolution_images"].memory.scratch(*shapes, **attributes)
    result = kernel["convolution_images"](
        np.asfortranarray(gradient),
        np.asfortranarray(weights),
        out=out,
        workspace=np.full(size, np.nan, np.float32),
        scratch=np.full(scratch, np.nan, np.float32),
        shape=shape,
        **attributes,
    )
    assert result is out
    assert np.ascontiguousarray(out).tobytes() == expected


@pytest.mark.parametrize(("shape", "filters", "attributes"), SHAPES, ids=str)
def test_the_output_lives_in_the_workspace_and_the_scratch_only_during_the_call(
    shape, filters, attributes
):
    # The memory plan holds the workspace as long as the output and frees the scratch
    # after the call: the output is a view of the workspace alone, and scribbling over
    # the scratch afterwards changes none of its bits (the same kernel, so the same bits).
    gradient, weights = operands(shape, filters, attributes)
    expected = np.ascontiguousarray(
        kernel["convolution_images"](gradient, weights, shape=shape, **attributes)
    ).tobytes()
    shapes = (Shape(gradient.shape), Shape(weights.shape), shape)
    primitive = REGISTRY["convolution_images"]
    workspace = np.full(primitive.memory.workspace(*shapes, **attributes), np.nan, np.float32)
    scratch = np.full(primitive.memory.scratch(*shapes, **attributes), np.nan, np.float32)
    result = kernel["convolution_images"](
        gradient, weights, workspace=workspace, scratch=scratch, shape=shape, **attributes
    )
    assert np.shares_memory(result, workspace) and not np.shares_memory(result, scratch)
    scratch.fill(np.inf)
    assert np.ascontiguousarray(result).tobytes() == expected


@st.composite
def same_size_problems(draw):
    """A convolution that keeps the images' size (an odd square kernel padded by half
    its width: the flat-shift path), its rows in pixel order or phase-major, small
    integers for values, so that every product
    and sum is exact in float32 and any order of the sums gives the definition's bits;
    and a cap on a chunk's multiply-adds that makes chunks of one image, a few, or all."""
    padding = draw(st.integers(0, 2))
    phases = draw(st.sampled_from([1, 2]))
    batch, channels, filters = (draw(st.integers(1, 5)) for _ in range(3))
    height, width = (phases * draw(st.integers(1, 6 // phases)) for _ in range(2))
    rows, taps = batch * height * width, (2 * padding + 1) ** 2
    values = st.integers(-8, 8)
    gradient = np.array(draw(st.lists(values, min_size=rows * filters, max_size=rows * filters)))
    weights = draw(
        st.lists(values, min_size=taps * channels * filters, max_size=taps * channels * filters)
    )
    cap = draw(st.sampled_from([1, height * width * channels * filters * 2, 10**6]))
    return (
        (batch, channels, height, width),
        PatchWindow(2 * padding + 1, 2 * padding + 1, 1, padding, phases),
        gradient.reshape(rows, filters).astype(np.float32),
        np.array(weights).reshape(taps * channels, filters).astype(np.float32),
        cap,
    )


@settings(max_examples=150, deadline=None)
@given(same_size_problems())
def test_the_flat_shift_path_is_the_definition(problem):
    # Each output pixel gathers the taps' contributions whose window covers it: the
    # definition, col2im(g K^T), in float64, here exact.
    shape, attribute, gradient, weights, cap = problem
    exact = col2im(
        gradient.astype(np.float64) @ weights.astype(np.float64).T, shape=shape, window=attribute
    )
    shapes = (Shape(gradient.shape), Shape(weights.shape), shape)
    primitive = REGISTRY["convolution_images"]
    with mock.patch.object(convolution_product, "SMALL_PRODUCT", cap):
        workspace = np.full(
            primitive.memory.workspace(*shapes, window=attribute), np.nan, np.float32
        )
        scratch = np.full(primitive.memory.scratch(*shapes, window=attribute), np.nan, np.float32)
        result = kernel["convolution_images"](
            gradient, weights, workspace=workspace, scratch=scratch, shape=shape, window=attribute
        )
    assert workspace.size == np.prod(shape)
    assert result.transpose(0, 2, 3, 1).flags.c_contiguous and np.shares_memory(result, workspace)
    assert np.array_equal(result, exact.astype(np.float32))


def test_the_product_is_the_patches_times_the_kernel():
    rng = np.random.default_rng(0)
    images = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    weights = rng.standard_normal((27, 4)).astype(np.float32)
    patches = im2col(images, **window())
    result = kernel["convolution"](patches, weights, images, **window())
    assert result.tobytes() == REGISTRY["matmul"].kernel(patches, weights).tobytes()


def test_a_differentiated_convolution_runs_no_col2im():
    tape = Tape()
    images = tape.parameter(Tensor.filled([2, 3, 6, 6], 0.5))
    weights = tape.parameter(Tensor.filled([4, 3, 3, 3], 0.25))
    bias = tape.parameter(Tensor.filled([4], 0.0))
    loss = conv2d(images, weights, bias, 1, 1).sum()
    tape.differentiate(loss, [images.symbol, weights.symbol, bias.symbol])
    operations = [node.operation for node in tape.nodes]
    assert "convolution_images" in operations
    assert "col2im" not in operations and "matmul_nt" not in operations


def test_patches_that_are_not_the_images_im2col_are_refused():
    tape = Tape()
    images = tape.parameter(Tensor.filled([2, 3, 6, 6], 0.5))
    patches = tape.parameter(Tensor.filled([70, 27], 0.5))
    weights = tape.parameter(Tensor.filled([27, 4], 0.5))
    with pytest.raises(ShapeError, match=r"^convolution: patches \[70, 27\] are not the im2col"):
        tape.record("convolution", (patches, weights, images), **window())

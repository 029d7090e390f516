"""convolution and convolution_images: a convolution's product, and its images' gradient.

`convolution(patches, kernel, images)` is `patches @ kernel` (`[N*OH*OW, F]`), where
`patches` must be `im2col(images, ...)` under the same window attributes: the product
reads the patches, the derivative reads the images' shape. Its rule sends the kernel
`patches^T @ g` and the images `convolution_images(g, kernel)`, and the patches
nothing, so im2col's own adjoint never runs: the images' gradient is made in one
kernel rather than as a product followed by a col2im.

`convolution_images(g, kernel)` is `col2im(g @ kernel^T)`. With stride 1 and rows in
pixel order it is computed tap by tap: one batched product gives each tap's `[rows, C]`
slab (`g @ kernel_t^T`), and each slab is added onto the padded channels-last
accumulator as whole image rows (`OW*C` contiguous values on both sides), taps in
row-major order. That is nine large adds where col2im, fed the product's rows, makes
forty-eight short ones (and its product's rows are a third as long). Other strides and
phase-major rows take the product and col2im. The order of every sum is fixed by the
shapes alone, so both routes, which call the same kernel, agree bit for bit.
"""

from __future__ import annotations

import numpy as np

from topos.ops.convolution import channels_last_interior, col2im, im2col
from topos.ops.matmul import matmul, matmul_nt
from topos.ops.patch_window import PatchWindow
from topos.ops.primitive import primitive
from topos.ops.shape_rules import fail
from topos.tensor import Shape


def _check_kernel(operation: str, kernel: Shape, depth: int) -> None:
    if kernel.rank != 2 or kernel[0] != depth:
        raise fail(operation, f"kernel {kernel} must be [{depth}, filters]")


def _infer_convolution(patches: Shape, kernel: Shape, images: Shape, window: PatchWindow) -> Shape:
    expected = im2col.infer(images, window)
    if patches != expected:
        raise fail(
            "convolution",
            f"patches {patches} are not the im2col {expected} of images {images}",
        )
    _check_kernel("convolution", kernel, expected[1])
    return Shape((expected[0], kernel[1]))


def _derive_convolution(algebra, inputs, output, gradient, needs, window):
    patches, kernel, images = inputs
    # The kernel's gradient first: it is the patches' last use, so they die before the
    # images' gradient, as big, is made.
    kernel_gradient = algebra.matmul_tn(patches, gradient) if needs[1] else None
    images_gradient = None
    if needs[2]:
        images_gradient = algebra.convolution_images(
            gradient, kernel, shape=tuple(algebra.shape(images)), window=window
        )
    return (None, kernel_gradient, images_gradient)


@primitive("convolution", 3, _infer_convolution, _derive_convolution)
def convolution(patches, kernel, images, out=None, *, window: PatchWindow):
    """`patches @ kernel`: the convolution of `images`, whose im2col `patches` are."""
    return matmul.kernel(patches, kernel, out=out)


def _infer_convolution_images(
    gradient: Shape, kernel: Shape, shape: tuple[int, ...], window: PatchWindow
) -> Shape:
    if len(shape) != 4:
        raise fail("convolution_images", f"images shape {list(shape)} must be [N, C, H, W]")
    patches = im2col.infer(Shape(shape), window)
    _check_kernel("convolution_images", kernel, patches[1])
    if gradient != (patches[0], kernel[1]):
        raise fail(
            "convolution_images",
            f"gradient {gradient} must be [{patches[0]}, {kernel[1]}] for images {list(shape)}",
        )
    return Shape(shape)


def _derive_convolution_images(algebra, inputs, output, gradient, needs, shape, window):
    # col2im(g K^T) is linear in g and in K: with h's patches A = im2col(h), the
    # adjoint in g is A K, and in K it is A^T g.
    product_gradient, kernel = inputs
    patches = algebra.im2col(gradient, window=window)
    kernel_gradient = algebra.matmul_tn(patches, product_gradient) if needs[1] else None
    return (algebra.matmul(patches, kernel) if needs[0] else None, kernel_gradient)


def _tap_by_tap(window: PatchWindow) -> bool:
    return window.stride == 1 and window.phases == 1


def _convolution_images_workspace(
    gradient: Shape, kernel: Shape, shape: tuple[int, ...], window: PatchWindow
) -> int:
    """The padded channels-last accumulator, whose interior is the output."""
    return col2im.workspace(Shape((gradient[0], kernel[0])), shape, window)


def _convolution_images_scratch(
    gradient: Shape, kernel: Shape, shape: tuple[int, ...], window: PatchWindow
) -> int:
    """One tap's slab (or, off the tap-by-tap path, the product's rows), needed only
    during the call: the memory plan frees it right after, while the output lives on."""
    if _tap_by_tap(window):
        return gradient[0] * (kernel[0] // window.taps)
    return gradient[0] * kernel[0]


@primitive(
    "convolution_images",
    2,
    _infer_convolution_images,
    _derive_convolution_images,
    workspace=_convolution_images_workspace,
    output_in_workspace=True,
    scratch=_convolution_images_scratch,
    layout=channels_last_interior,
)
def convolution_images(
    gradient,
    kernel,
    out=None,
    workspace=None,
    scratch=None,
    *,
    shape: tuple[int, ...],
    window: PatchWindow,
):
    """`col2im(gradient @ kernel^T)`, `[N, C, H, W]` channels-last in memory; tap by tap
    for stride 1 and rows in pixel order (see the module). The products go to `scratch`,
    the padded accumulator (the output's storage) to `workspace`."""
    rows, depth = gradient.shape[0], kernel.shape[0]
    shapes = (Shape(gradient.shape), Shape(kernel.shape), shape, window)
    if workspace is None:
        workspace = np.empty(_convolution_images_workspace(*shapes), dtype=gradient.dtype)
    if scratch is None:
        scratch = np.empty(_convolution_images_scratch(*shapes), dtype=gradient.dtype)
    accumulator = workspace
    if not _tap_by_tap(window):
        products = scratch[: rows * depth].reshape(rows, depth)
        patches = matmul_nt.kernel(gradient, kernel, out=products)
        return col2im.kernel(patches, out=out, workspace=accumulator, shape=shape, window=window)
    kernel_width, padding = window.kernel_width, window.padding
    batch, channels, height, width = shape
    out_height, out_width = window.output_extents(height, width)
    taps = window.taps
    padded_height, padded_width = height + 2 * padding, width + 2 * padding
    # slab = gradient @ kernel_t^T, kernel_t the tap's [C, F] rows of the kernel: one
    # product per tap (one GEMM each, as a batched matmul makes them), added at once,
    # so the scratch holds one slab rather than all nine.
    slab = scratch[: rows * channels].reshape(rows, channels)
    filters = kernel.shape[1]
    operand = np.ascontiguousarray(gradient)
    weights = np.ascontiguousarray(kernel).reshape(taps, channels, filters).transpose(0, 2, 1)
    summed = accumulator[: batch * padded_height * padded_width * channels]
    summed = summed.reshape(batch, padded_height, padded_width * channels)
    summed.fill(0)
    run = out_width * channels
    for tap in range(taps):
        np.matmul(operand, weights[tap], out=slab)
        ky, kx = divmod(tap, kernel_width)
        target = summed[:, ky : ky + out_height, kx * channels : kx * channels + run]
        np.add(target, slab.reshape(batch, out_height, run), out=target)
    interior = summed.reshape(batch, padded_height, padded_width, channels)
    interior = interior[:, padding : padding + height, padding : padding + width, :]
    if out is None:
        return interior.transpose(0, 3, 1, 2)
    np.copyto(out, interior.transpose(0, 3, 1, 2))
    return out

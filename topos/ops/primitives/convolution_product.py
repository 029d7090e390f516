"""convolution, convolution_kernel and convolution_images: a convolution's product, its
kernel's gradient and its images' gradient.

`convolution(patches, kernel, images)` is `patches @ kernel` (`[N*OH*OW, F]`), where
`patches` must be `im2col(images, ...)` under the same window attributes: the product
reads the patches, the derivative reads the images' shape. Its rule sends the kernel
`convolution_kernel(patches, g)`, `patches^T @ g`, and the images
`convolution_images(g, kernel)`, and the patches nothing, so im2col's own adjoint never
runs: the images' gradient is made in one kernel rather than as a product followed by
a col2im.

How the two products are cut depends on the BLAS kernels (`topos.ops.blas_kernel`):
with OpenBLAS's AVX2 kernels (Haswell, Zen), which pack every product, the forward is one
product and the kernel's gradient one product `g^T @ patches`, transposed into place;
elsewhere (SkylakeX's unpacked small products) they are `matmul`'s and `matmul_tn`'s,
in row blocks. The choice follows the machine's BLAS by a rule, so on one machine every
route calls the same kernel and the bits are the same; across machines the products
agree to float32 rounding.

`convolution_images(g, kernel)` is `col2im(g @ kernel^T)`. With stride 1 and rows in
pixel order it is computed tap by tap: each tap's `[rows, C]` slab (`g @ kernel_t^T`)
lands on the channels-last images, taps summed in row-major order. When the images keep
their size ("same" padding: an odd square kernel padded by half its width) tap `(ky,
kx)` moves every pixel by one flat offset, `((ky - p) * W + (kx - p)) * C`, so the
output, `[N, H, W, C]` with no padding, is the sum of the taps' slabs each read at its
offset: one strided view of the slabs, summed over its tap axes in one reduction. The
slab entries whose pixel falls off the image are set to zero first, and zero margins
around each slab stand for what lies outside (an exact zero changes no sum but, at
most, the sign of a zero). The images go a chunk at a time, as many as keep a tap's
product within `SMALL_PRODUCT` multiply-adds, so the slabs and the chunk's pixels stay
in cache and OpenBLAS takes its unpacked small-matrix path; one batched product makes
a chunk's slabs. Other paddings add each slab as whole image rows (`OW*C` contiguous
values on both sides) onto a padded accumulator; other strides and phase-major rows
take the product and col2im. The order of every sum is fixed by the shapes alone, so
both routes, which call the same kernel, agree bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topos.ops.blas_kernel import packs_every_product
from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_parameters, record, recorded, window
from topos.ops.memory_order import Layout
from topos.ops.memory_rules import MemoryRules
from topos.ops.patch_window import PatchWindow
from topos.ops.primitive import declare_examples, primitive
from topos.ops.primitives.convolution import (
    channels_last_interior,
    col2im,
    emitted_images,
    emitted_rows,
    im2col,
)
from topos.ops.primitives.matmul import (
    SMALL_PRODUCT,
    contiguous_operands,
    matmul,
    matmul_nt,
    matmul_tn,
    operand_copies,
    product_flops,
)
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
    kernel_gradient = algebra.convolution_kernel(patches, gradient) if needs[1] else None
    images_gradient = None
    if needs[2]:
        images_gradient = algebra.convolution_images(
            gradient, kernel, shape=tuple(algebra.shape(images)), window=window
        )
    return (None, kernel_gradient, images_gradient)


def _convolution_flops(output: Shape, patches: Shape, kernel: Shape, images: Shape, **_) -> int:
    """`patches @ kernel`'s FLOPs (the images are only the derivative's)."""
    return 2 * output.volume * patches[-1]


@primitive("convolution", 3, _infer_convolution, _derive_convolution, flops=_convolution_flops)
def convolution(patches, kernel, images, out=None, *, window: PatchWindow):
    """`patches @ kernel`: the convolution of `images`, whose im2col `patches` are; one
    product with AVX2 kernels, else `matmul`'s row blocks (see the module)."""
    if not packs_every_product():
        return matmul.kernel(patches, kernel, out=out)
    patches, kernel, _ = contiguous_operands(patches, kernel, None)
    if out is not None and not out.flags.c_contiguous:
        # BLAS writes a C-contiguous result, so the bits never depend on out's layout.
        np.copyto(out, np.matmul(patches, kernel))
        return out
    return np.matmul(patches, kernel, out=out)


def _infer_convolution_kernel(patches: Shape, gradient: Shape) -> Shape:
    return matmul_tn.infer(patches, gradient)


def _derive_convolution_kernel(algebra, inputs, output, gradient, needs):
    # C = A^T B, as matmul_tn: the gradient of A is B G^T, that of B is A G.
    patches, product_gradient = inputs
    return (
        algebra.matmul_nt(product_gradient, gradient) if needs[0] else None,
        algebra.matmul(patches, gradient) if needs[1] else None,
    )


def _transposed_product(rank: int) -> bool:
    """Whether `convolution_kernel` makes `g^T @ patches` and transposes it: with AVX2
    kernels, for the rank-2 operands a convolution has."""
    return rank == 2 and packs_every_product()


def _convolution_kernel_workspace(patches: Shape, gradient: Shape, layouts=None) -> int:
    """The operands' contiguous copies and the `[F, K]` product transposed into the
    output, with AVX2 kernels; else `matmul_tn`'s workspace."""
    if not _transposed_product(patches.rank):
        return matmul_tn.memory.workspace(patches, gradient, layouts=layouts)
    return operand_copies(patches, gradient, layouts) + patches[1] * gradient[1]


@primitive(
    "convolution_kernel",
    2,
    _infer_convolution_kernel,
    _derive_convolution_kernel,
    memory=MemoryRules(workspace=_convolution_kernel_workspace, workspace_reads_layouts=True),
    flops=product_flops(-2),
)
def convolution_kernel(patches, gradient, out=None, workspace=None):
    """`patches^T @ gradient`, the gradient of a convolution's kernel `[K, F]`: with AVX2
    kernels one product `gradient^T @ patches` `[F, K]`, transposed into place (on
    OpenBLAS's Haswell kernels faster than BLAS reading the patches transposed, or than
    `matmul_tn`'s blocks); else `matmul_tn`'s (see the module)."""
    if not _transposed_product(np.ndim(patches)):
        return matmul_tn.kernel(patches, gradient, out=out, workspace=workspace)
    patches, gradient, start = contiguous_operands(patches, gradient, workspace)
    depth, filters = patches.shape[1], gradient.shape[1]
    if workspace is not None and workspace.size - start >= depth * filters:
        product = workspace[start : start + depth * filters].reshape(filters, depth)
    else:
        product = np.empty((filters, depth), np.result_type(patches, gradient))
    np.matmul(gradient.T, patches, out=product)
    if out is None:
        return np.ascontiguousarray(product.T)
    np.copyto(out, product.T)
    return out


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


def _same_size(shape: tuple[int, ...], window: PatchWindow) -> bool:
    """Whether the images' gradient is made by flat shifts (see the module): stride 1,
    and the output extents are the images' (rows in pixel order or phase-major)."""
    return window.stride == 1 and window.output_extents(shape[2], shape[3]) == tuple(shape[2:])


def _chunk_images(shape: tuple[int, ...], filters: int) -> int:
    """How many images one chunk of the flat-shift path takes: as many as keep a tap's
    product (`[n*H*W, F] @ [F, C]`) within SMALL_PRODUCT multiply-adds, at least one."""
    batch, channels, height, width = shape
    per_image = height * width * filters * channels
    return max(1, min(batch, SMALL_PRODUCT // max(1, per_image)))


def _margin(shape: tuple[int, ...], window: PatchWindow) -> int:
    """The farthest a tap moves a pixel on the flat-shift path, in elements."""
    return (window.padding * shape[3] + window.padding) * shape[1]


def _reordered_rows(shape: tuple[int, ...], filters: int, window: PatchWindow) -> int:
    """A chunk's gradient rows in pixel order, when they come phase-major."""
    if window.phases == 1:
        return 0
    return _aligned(_chunk_images(shape, filters) * shape[2] * shape[3] * filters)


def _slab_stride(shape: tuple[int, ...], filters: int, window: PatchWindow) -> int:
    """One tap's slab on the flat-shift path: a chunk's pixels between two margins."""
    per_image = shape[1] * shape[2] * shape[3]
    return _aligned(_chunk_images(shape, filters) * per_image + 2 * _margin(shape, window))


def _convolution_images_workspace(
    gradient: Shape, kernel: Shape, shape: tuple[int, ...], window: PatchWindow
) -> int:
    """The accumulator, whose (interior) is the output: the images themselves on the
    flat-shift path, else padded."""
    if _same_size(shape, window):
        return Shape(shape).volume
    return col2im.memory.workspace(Shape((gradient[0], kernel[0])), shape, window)


def _convolution_images_scratch(
    gradient: Shape, kernel: Shape, shape: tuple[int, ...], window: PatchWindow
) -> int:
    """The taps' weights and a chunk's slab for every tap between zero margins, on the
    flat-shift path; one tap's slab off it, or off the tap-by-tap path the product's rows:
    needed only during the call, the memory plan frees it right after, while the output
    lives on."""
    if _same_size(shape, window):
        slabs = window.taps * _slab_stride(shape, gradient[1], window)
        return _aligned(kernel.volume) + slabs + _reordered_rows(shape, gradient[1], window)
    if _tap_by_tap(window):
        return gradient[0] * (kernel[0] // window.taps)
    return gradient[0] * kernel[0]


def _convolution_images_layout(operand_layouts, operand_shapes, output, attributes) -> Layout:
    """Channels-last: dense on the flat-shift path, else the padded accumulator's
    interior (dense only without padding)."""
    if _same_size(attributes["shape"], attributes["window"]):
        return (0, 2, 3, 1)
    return channels_last_interior(operand_layouts, operand_shapes, output, attributes)


def _aligned(elements: int) -> int:
    """`elements` rounded up to a multiple of 16 (64 bytes of float32)."""
    return -(-elements // 16) * 16


def _shifted_taps(gradient, kernel, accumulator, scratch, shape, window) -> np.ndarray:
    """The images' gradient made by flat shifts into `accumulator` (`N*H*W*C` elements),
    returned as `[N, H, W, C]` (see the module). Per chunk of images, one batched product
    makes every tap's slab, and one sum over a strided view of the slabs, each read
    shifted by its tap's offset, writes the chunk's pixels: the taps in order, the zero
    margins around each slab standing for what falls outside the chunk."""
    batch, channels, height, width = shape
    filters, padding = kernel.shape[1], window.padding
    taps, kernel_width = window.taps, window.kernel_width
    per_image, pixels = height * width * channels, height * width
    margin = _margin(shape, window)
    stride = _slab_stride(shape, filters, window)
    step = _chunk_images(shape, filters)
    operand = np.ascontiguousarray(gradient)
    # Each tap's [F, C] operand, contiguous: BLAS's small-matrix path multiplies by a
    # transposed operand (the kernel's own rows) at about two thirds the speed.
    weights = scratch[: taps * filters * channels].reshape(taps, filters, channels)
    np.copyto(weights, kernel.reshape(taps, channels, filters).transpose(0, 2, 1))
    start = _aligned(weights.size)
    slabs = scratch[start : start + taps * stride].reshape(taps, stride)
    start += taps * stride
    phases = window.phases
    if phases > 1:
        # The rows come phase-major: each chunk's are put in pixel order first.
        reordered = scratch[start : start + step * pixels * filters]
        by_phase = operand.reshape(
            phases, phases, batch, height // phases, width // phases, filters
        ).transpose(2, 3, 0, 4, 1, 5)
    slabs[:, :margin] = 0
    slabs[:, margin + step * per_image :] = 0
    # summed[ky, kx, q] = slab (ky, kx) at margin + q - ((ky - p) * W + (kx - p)) * C.
    itemsize = slabs.itemsize
    first_read = margin + (padding * width + padding) * channels
    # The view made by the ndarray constructor on the slabs' buffer, not `as_strided`:
    # that one reads `__array_interface__`, whose fresh `typestr` CPython interns and drops
    # again each call, and a step's calls refill the interned-string table until its
    # rebuild doubles it (see `topos.ops.split_view`).
    reads = np.ndarray(
        shape=(window.kernel_height, kernel_width, step * per_image),
        dtype=slabs.dtype,
        buffer=slabs.reshape(-1),
        offset=first_read * itemsize,
        strides=(
            (kernel_width * stride - width * channels) * itemsize,
            (stride - channels) * itemsize,
            itemsize,
        ),
    )
    reads.flags.writeable = False
    summed = accumulator[: batch * per_image]
    for first in range(0, batch, step):
        count = min(step, batch - first)
        length = count * per_image
        if count < step:  # the last chunk's right margin lies inside the slabs' bodies
            slabs[:, margin + length : margin + length + margin] = 0
        body = slabs[:, margin : margin + length]
        if phases > 1:
            rows = reordered[: count * pixels * filters].reshape(by_phase[:count].shape)
            np.copyto(rows, by_phase[first : first + count])
            rows = rows.reshape(count * pixels, filters)
        else:
            rows = operand[first * pixels : (first + count) * pixels]
        np.matmul(rows, weights, out=body.reshape(taps, count * pixels, channels))
        # Pixels whose target falls off the image: zeros, landing anywhere.
        by_tap = body.reshape(window.kernel_height, kernel_width, count, height, width, channels)
        for ky in range(window.kernel_height):
            down = ky - padding
            if down < 0:
                by_tap[ky, :, :, :-down] = 0
            elif down > 0:
                by_tap[ky, :, :, height - down :] = 0
        for kx in range(kernel_width):
            right = kx - padding
            if right < 0:
                by_tap[:, kx, :, :, :-right] = 0
            elif right > 0:
                by_tap[:, kx, :, :, width - right :] = 0
        target = summed[first * per_image : first * per_image + length]
        np.add.reduce(reads[:, :, :length], axis=(0, 1), out=target)
    return summed.reshape(batch, height, width, channels)


def _convolution_images_flops(output: Shape, gradient: Shape, kernel: Shape, **_) -> int:
    """col2im(gradient @ kernel^T)'s FLOPs: the product, then one add per product entry."""
    return (2 * gradient.volume + gradient[0]) * kernel[0]


@primitive(
    "convolution_images",
    2,
    _infer_convolution_images,
    _derive_convolution_images,
    memory=MemoryRules(
        workspace=_convolution_images_workspace,
        output_in_workspace=True,
        scratch=_convolution_images_scratch,
        layout=_convolution_images_layout,
    ),
    flops=_convolution_images_flops,
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
    the accumulator (the output's storage) to `workspace`."""
    rows, depth = gradient.shape[0], kernel.shape[0]
    shapes = (Shape(gradient.shape), Shape(kernel.shape), shape, window)
    if workspace is None:
        workspace = np.empty(_convolution_images_workspace(*shapes), dtype=gradient.dtype)
    if scratch is None:
        scratch = np.empty(_convolution_images_scratch(*shapes), dtype=gradient.dtype)
    accumulator = workspace
    if _same_size(shape, window):
        images = _shifted_taps(gradient, kernel, accumulator, scratch, shape, window)
        if out is None:
            return images.transpose(0, 3, 1, 2)
        np.copyto(out, images.transpose(0, 3, 1, 2))
        return out
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


def _convolution_example(name: str, shape, filters: int, **attributes) -> Example:
    """The product over `im2col(images)` recorded with the images, both varying."""
    depth = im2col.infer(Shape(shape), **attributes)[1]

    def express(images, kernel):
        patches = record("im2col", images, **attributes)
        return images.tape.record("convolution", (patches, kernel, images), **attributes)

    return Example(name, normal(shape, (depth, filters)), on_parameters(express))


def _convolution_images_example(name: str, shape, filters: int, **attributes) -> Example:
    rows, depth = im2col.infer(Shape(shape), **attributes)
    return Example(
        name,
        normal((rows, filters), (depth, filters)),
        recorded("convolution_images", shape=shape, **attributes),
    )


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "convolution",
    _convolution_example("convolution_3x3_same", (2, 2, 4, 5), 3, **window()),
    _convolution_example("convolution_stride2", (1, 3, 5, 6), 2, **window(stride=2, padding=1)),
    _convolution_example("convolution_phases2", (2, 2, 4, 4), 3, **window(phases=2)),
)

declare_examples(
    "convolution_kernel",
    Example("convolution_kernel", normal((6, 3), (6, 2)), recorded("convolution_kernel")),
)

declare_examples(
    "convolution_images",
    _convolution_images_example("convolution_images_3x3_same", (2, 2, 4, 5), 3, **window()),
    _convolution_images_example(
        "convolution_images_2x3_valid", (2, 3, 4, 5), 2, **window(2, 3, 1, 0)
    ),
    _convolution_images_example(
        "convolution_images_stride2", (1, 3, 5, 6), 2, **window(stride=2, padding=1)
    ),
    _convolution_images_example("convolution_images_phases2", (2, 2, 4, 4), 3, **window(phases=2)),
)

# Emission: the peer's own convolution of the images (the patches, recorded for topos's
# derivative, are left unread), and of its adjoint for the images' gradient -------------


def emitted_weights(xp: Any, kernel: Any, window: PatchWindow) -> Any:
    """The kernel matrix `[KH*KW*C, F]` (tap-major rows) as convolution weights
    `[F, C, KH, KW]`, the shape a peer's convolution takes."""
    depth, filters = kernel.shape
    channels = depth // window.taps
    taps = xp.reshape(kernel, (window.kernel_height, window.kernel_width, channels, filters))
    return xp.permute(taps, (3, 2, 0, 1))


def _emit_convolution(xp, patches, kernel, images, *, window):
    convolved = xp.convolution(images, emitted_weights(xp, kernel, window), window)
    return emitted_rows(xp, convolved, window.phases)


def _emit_convolution_images(xp, gradient, kernel, *, shape, window):
    batch, _, height, width = shape
    out_height, out_width = window.output_extents(height, width)
    outputs = emitted_images(xp, gradient, batch, out_height, out_width, window.phases)
    return xp.transposed_convolution(outputs, emitted_weights(xp, kernel, window), window, shape)


declare_emission("convolution", _emit_convolution, unread=(0,))
declare_emission("convolution_kernel", lambda xp, a, b: xp.matmul(xp.swap_last(a), b))
declare_emission("convolution_images", _emit_convolution_images)

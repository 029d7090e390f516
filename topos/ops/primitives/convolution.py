"""im2col and col2im: a convolution's patch matrix, and its adjoint; each the other's.

`im2col(images [N, C, H, W])` gives the matrix `[N*OH*OW, KH*KW*C]` whose row
`(n, oy, ox)` lists the zero-padded window under output pixel `(oy, ox)` of image
`n`, tap-major: column `(ky*KW + kx)*C + c` holds channel `c` at tap `(ky, kx)`.
`col2im` adds every row's entries back onto the pixels they came from: one node
each for what the composed form (pad, unfolds, permute, reshape) says in seven.

With `phases = P > 1` the rows come *phase-major*: row
`((py*P + px)*N + n)*(OH/P * OW/P) + y*(OW/P) + x` is output pixel
`(P*y + py, P*x + px)` of image `n`, so each pooling phase is one contiguous block
of the product (the README's performance section says why that pays).

Both kernels are pure functions of their operand's values and shape: im2col only
copies, and col2im's summation order is fixed by the shapes alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, recorded, window
from topos.ops.memory_order import Layout
from topos.ops.memory_rules import MemoryRules
from topos.ops.patch_window import PatchWindow
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import fail
from topos.ops.split_view import split_axis
from topos.tensor import Shape


def _check_window(operation: str, window: PatchWindow) -> None:
    if not isinstance(window, PatchWindow):
        raise fail(operation, f"window {window!r} must be a PatchWindow")
    kernel_height, kernel_width = window.kernel_height, window.kernel_width
    if kernel_height < 1 or kernel_width < 1 or window.stride < 1 or window.padding < 0:
        raise fail(
            operation,
            f"kernel {kernel_height}x{kernel_width}, stride {window.stride} and padding "
            f"{window.padding} must be positive (padding at least 0)",
        )


def _check_phases(operation: str, out_height: int, out_width: int, phases: int) -> None:
    if phases < 1 or out_height % phases or out_width % phases:
        raise fail(
            operation,
            f"phases {phases} must be positive and divide the output's {out_height}x{out_width}",
        )


def _infer_im2col(images: Shape, window: PatchWindow) -> Shape:
    _check_window("im2col", window)
    if images.rank != 4:
        raise fail("im2col", f"images {images} must be [N, C, H, W]")
    batch, channels, height, width = images
    padding = window.padding
    if height + 2 * padding < window.kernel_height or width + 2 * padding < window.kernel_width:
        raise fail(
            "im2col",
            f"a {window.kernel_height}x{window.kernel_width} kernel does not fit images {images} "
            f"padded by {padding}",
        )
    out_height, out_width = window.output_extents(height, width)
    _check_phases("im2col", out_height, out_width, window.phases)
    return Shape((batch * out_height * out_width, window.taps * channels))


def _derive_im2col(algebra, inputs, output, gradient, needs, window):
    shape = tuple(algebra.shape(inputs[0]))
    return (algebra.col2im(gradient, shape=shape, window=window),)


def _padded_elements(images: Shape, padding: int) -> int:
    batch, channels, height, width = images
    return batch * (height + 2 * padding) * (width + 2 * padding) * channels


#: At most how many elements im2col's padded copy holds (at least one image's): the
#: images are padded a group at a time, so the copy stays small beside the patch
#: matrix (it is the memory a rematerialized im2col adds to its floor) and in cache.
PADDED_GROUP_ELEMENTS = 16384


#: Up to how many channels im2col copies images laid out channel by channel one
#: channel plane at a time (with 16 such planes, the pixel-by-pixel copy is 3.5x faster).
_PLANE_CHANNELS = 4


def _images_per_group(images: Shape, padding: int) -> int:
    """How many images im2col pads at once."""
    batch, channels, height, width = images
    one = _padded_elements(Shape((1, channels, height, width)), padding)
    return max(1, min(batch, PADDED_GROUP_ELEMENTS // one))


def _im2col_workspace(images: Shape, window: PatchWindow) -> int:
    """One group of padded channels-last images (none without padding)."""
    if not window.padding:
        return 0
    _, channels, height, width = images
    group = _images_per_group(images, window.padding)
    return _padded_elements(Shape((group, channels, height, width)), window.padding)


@primitive(
    "im2col", 1, _infer_im2col, _derive_im2col, memory=MemoryRules(workspace=_im2col_workspace)
)
def im2col(images, out=None, workspace=None, *, window: PatchWindow):
    """The patch matrix `[N*OH*OW, KH*KW*C]`, tap-major, of zero-padded images, its
    rows phase-major when `window.phases > 1`; padded a group of images at a time in
    `workspace` when one is given."""
    padding = window.padding
    batch, channels, height, width = images.shape
    out_height, out_width = window.output_extents(height, width)
    channels_last = images.transpose(0, 2, 3, 1)
    shape = (batch * out_height * out_width, window.taps * channels)
    target = out if out is not None and out.flags.c_contiguous else np.empty(shape, images.dtype)
    if not target.size:
        pass
    elif padding:
        group = _images_per_group(images.shape, padding)
        padded_shape = (group, height + 2 * padding, width + 2 * padding, channels)
        if workspace is None:
            padded = np.zeros(padded_shape, dtype=images.dtype)
        else:
            padded = workspace[: int(np.prod(padded_shape))].reshape(padded_shape)
            # The border stays zero: each group overwrites the interior only.
            padded.fill(0)
        interior = padded[:, padding : padding + height, padding : padding + width, :]
        windows, rows = _windows(padded, target, batch, window, out_height, out_width)
        # A few channels in planes of their own (images fed as [N, C, H, W]): copied
        # plane by plane, whose inner loops run along the image rows, not across the
        # C channels of a pixel (RGB images: 0.13 -> 0.05 ms for 32 32x32 images).
        by_plane = channels <= _PLANE_CHANNELS and images.strides[3] == images.itemsize
        for first in range(0, batch, group):
            count = min(group, batch - first)
            if by_plane:
                for channel in range(channels):
                    interior[:count, ..., channel] = images[first : first + count, channel]
            else:
                interior[:count] = channels_last[first : first + count]
            np.copyto(rows[first : first + count], windows[:count])
    else:
        windows, rows = _windows(channels_last, target, batch, window, out_height, out_width)
        np.copyto(rows, windows)
    if out is None or out is target:
        return target
    np.copyto(out, target)
    return out


def _windows(padded, target, batch: int, window: PatchWindow, out_height: int, out_width: int):
    """The windows of `padded` (channels-last zero-padded images) and the patch matrix
    `target`'s rows, as two views of the same shape `[N, OH/P, P, OW/P, P, ...]` to
    copy the first into the second (along the batch, image by image)."""
    kernel_height, kernel_width = window.kernel_height, window.kernel_width
    stride, phases = window.stride, window.phases
    count, _, _, channels = padded.shape
    if padded.flags.c_contiguous:
        # Each window row's (kx, c) values are one contiguous run of the channels-last
        # image, and of the patch row: copied as one opaque element of that many bytes,
        # a third of the work of copying them value by value (the same bytes land).
        run = np.dtype(f"V{kernel_width * channels * padded.itemsize}")
        batch_step, row_step, column_step, _ = padded.strides
        runs = np.ndarray(
            (count, out_height, out_width, kernel_height),
            dtype=run,
            buffer=padded,
            strides=(batch_step, row_step * stride, column_step * stride, row_step),
        )
        rows = _phase_blocks(
            target.view(run), batch, out_height, out_width, (kernel_height,), phases
        )
        return _split_pixels(runs, phases), rows
    # windows[n, y, x, c, ky, kx] = padded[n, y + ky, x + kx, c]
    windows = sliding_window_view(padded, (kernel_height, kernel_width), axis=(1, 2))
    windows = windows[:, : (out_height - 1) * stride + 1 : stride]
    windows = windows[:, :, : (out_width - 1) * stride + 1 : stride]
    rows = _phase_blocks(
        target, batch, out_height, out_width, (kernel_height, kernel_width, channels), phases
    )
    return _split_pixels(windows.transpose(0, 1, 2, 4, 5, 3), phases), rows


def _split_pixels(pixels, phases: int):
    """`[N, OH, OW, ...]` as the view `[N, OH/P, P, OW/P, P, ...]`."""
    return split_axis(split_axis(pixels, 1, phases), 3, phases)


def _phase_blocks(rows, batch, out_height, out_width, row_shape, phases):
    """The contiguous patch matrix `rows` (in the row order `phases` gives) as the view
    `[N, OH/P, P, OW/P, P, *row_shape]` that `_split_pixels` indexes pixels by."""
    blocks = rows.reshape(
        phases, phases, batch, out_height // phases, out_width // phases, *row_shape
    )
    return blocks.transpose(2, 3, 0, 4, 1, *range(5, blocks.ndim))


def _infer_col2im(patches: Shape, shape: tuple[int, ...], window: PatchWindow) -> Shape:
    _check_window("col2im", window)
    if len(shape) != 4:
        raise fail("col2im", f"target shape {list(shape)} must be [N, C, H, W]")
    expected = _infer_im2col(Shape(shape), window)
    if patches != expected:
        raise fail(
            "col2im",
            f"patches {patches} do not match images {list(shape)} under a "
            f"{window.kernel_height}x{window.kernel_width} kernel at stride {window.stride}, "
            f"padding {window.padding} (expected {expected})",
        )
    return Shape(shape)


def _derive_col2im(algebra, inputs, output, gradient, needs, shape, window):
    return (algebra.im2col(gradient, window=window),)


def channels_last_interior(operand_layouts, operand_shapes, output, attributes) -> Layout:
    """The layout of an output that is the interior of a padded channels-last accumulator:
    channels-last when there is no padding, else a strided view."""
    return (0, 2, 3, 1) if attributes["window"].padding == 0 else None


def _col2im_workspace(patches: Shape, shape: tuple[int, ...], window: PatchWindow) -> int:
    """The padded channels-last accumulator, whose interior is the output."""
    return _padded_elements(Shape(shape), window.padding)


@primitive(
    "col2im",
    1,
    _infer_col2im,
    _derive_col2im,
    memory=MemoryRules(
        workspace=_col2im_workspace, output_in_workspace=True, layout=channels_last_interior
    ),
)
def col2im(patches, out=None, workspace=None, *, shape: tuple[int, ...], window: PatchWindow):
    """Adds each patch entry back onto its pixel; `[N, C, H, W]`, channels-last in memory.

    The accumulator is `workspace` when one is given (then, without `out`, the output
    is a view into it).

    The order of the additions is fixed by the shapes, and the same whatever the row
    order `window.phases` gives: for stride 1, tap rows `ky` in order, and within one, the
    windows starting at `x = r (mod KW)` for r in order; for a larger stride, taps in
    row-major order.
    """
    kernel_height, kernel_width = window.kernel_height, window.kernel_width
    stride, padding, phases = window.stride, window.padding, window.phases
    batch, channels, height, width = shape
    out_height, out_width = window.output_extents(height, width)
    padded_height, padded_width = height + 2 * padding, width + 2 * padding
    accumulated_shape = (batch, padded_height, padded_width, channels)
    if workspace is None:
        accumulated = np.zeros(accumulated_shape, dtype=patches.dtype)
    else:
        accumulated = workspace[: _padded_elements(Shape(shape), padding)]
        accumulated = accumulated.reshape(accumulated_shape)
        accumulated.fill(0)
    if stride == 1:
        # windows[n, y', py, x', px, ky, :]: the (kx, c) run of window (P*y' + py, P*x' + px).
        windows = _phase_blocks(
            patches,
            batch,
            out_height,
            out_width,
            (kernel_height, kernel_width * channels),
            phases,
        )
        rows = accumulated.reshape(batch, padded_height, padded_width * channels)
        run = kernel_width * channels
        plain = patches.reshape(batch, out_height, out_width, kernel_height, run)
        for ky in range(kernel_height):
            for first in range(kernel_width):
                # Windows first, first + KW, ...: disjoint, so their order within the
                # pass does not matter. One add per window column: a strided view that
                # NumPy adds in place without copying it first (handed the whole pass
                # as one 4-d view, it copies the operand: ~0.6 MB a pass).
                for x in range(first, out_width, kernel_width):
                    target = rows[:, ky : ky + out_height, x * channels : x * channels + run]
                    if phases == 1:  # plain slices: no strided view to build per add
                        np.add(target, plain[:, :, x, ky], out=target)
                        continue
                    column, phase = divmod(x, phases)
                    target = split_axis(target, 1, phases)
                    np.add(target, windows[:, :, :, column, phase, ky], out=target)
    else:
        taps = _phase_blocks(
            patches,
            batch,
            out_height,
            out_width,
            (kernel_height, kernel_width, channels),
            phases,
        )
        for ky in range(kernel_height):
            for kx in range(kernel_width):
                target = accumulated[
                    :,
                    ky : ky + (out_height - 1) * stride + 1 : stride,
                    kx : kx + (out_width - 1) * stride + 1 : stride,
                    :,
                ]
                target = _split_pixels(target, phases)
                np.add(target, taps[..., ky, kx, :], out=target)
    interior = accumulated[:, padding : padding + height, padding : padding + width, :]
    if out is None:
        # The interior of the accumulator itself: rows of W*C contiguous values.
        return interior.transpose(0, 3, 1, 2)
    np.copyto(out, interior.transpose(0, 3, 1, 2))
    return out


def _im2col_example(name: str, shape: tuple[int, ...], **attributes) -> Example:
    return Example(name, normal(shape), recorded("im2col", **attributes))


def _col2im_example(name: str, shape: tuple[int, ...], **attributes) -> Example:
    patches = _infer_im2col(Shape(shape), **attributes)
    return Example(name, normal(tuple(patches)), recorded("col2im", shape=shape, **attributes))


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "im2col",
    _im2col_example("im2col_3x3_same", (2, 2, 4, 5), **window()),
    _im2col_example("im2col_stride2", (1, 3, 5, 6), **window(stride=2, padding=1)),
    _im2col_example("im2col_2x3_valid", (2, 2, 4, 5), **window(2, 3, 1, 0)),
    _im2col_example("im2col_3x3_same_phases2", (2, 2, 4, 4), **window(phases=2)),
    _im2col_example("im2col_stride2_phases2", (1, 3, 7, 7), **window(stride=2, phases=2)),
    _im2col_example("im2col_3x3_same_phases3", (1, 2, 6, 6), **window(phases=3)),
    _im2col_example("im2col_2x3_valid_phases2", (1, 2, 5, 6), **window(2, 3, 1, 0, phases=2)),
)

declare_examples(
    "col2im",
    _col2im_example("col2im_3x3_same", (2, 2, 4, 5), **window()),
    _col2im_example("col2im_stride2", (1, 3, 5, 6), **window(stride=2, padding=1)),
    _col2im_example("col2im_2x3_valid", (2, 2, 4, 5), **window(2, 3, 1, 0)),
    _col2im_example("col2im_3x3_same_phases2", (2, 2, 4, 4), **window(phases=2)),
    _col2im_example("col2im_stride2_phases2", (1, 3, 7, 7), **window(stride=2, phases=2)),
    _col2im_example("col2im_3x3_same_phases3", (1, 2, 6, 6), **window(phases=3)),
    _col2im_example("col2im_2x3_valid_phases2", (1, 2, 5, 6), **window(2, 3, 1, 0, phases=2)),
)

# Emission: the peer's own patches, put in im2col's row order (tap-major columns, rows in
# pixel or phase-major order); col2im as their adjoint ----------------------------------


def emitted_rows(xp: Any, images: Any, phases: int) -> Any:
    """`images [N, D, OH, OW]` (a peer's array) as the rows `[N*OH*OW, D]` of a patch
    matrix: one row per output pixel, in pixel order, or phase-major for `phases > 1`
    (see the module)."""
    batch, depth, height, width = images.shape
    split = xp.reshape(images, (batch, depth, height // phases, phases, width // phases, phases))
    # (n, d, y, py, x, px) -> (py, px, n, y, x, d)
    return xp.reshape(xp.permute(split, (3, 5, 0, 2, 4, 1)), (-1, depth))


def emitted_images(xp: Any, rows: Any, batch: int, height: int, width: int, phases: int) -> Any:
    """The inverse of `emitted_rows`: rows `[N*OH*OW, D]` as images `[N, D, OH, OW]`."""
    depth = rows.shape[1]
    split = xp.reshape(rows, (phases, phases, batch, height // phases, width // phases, depth))
    # (py, px, n, y, x, d) -> (n, d, y, py, x, px)
    return xp.reshape(xp.permute(split, (2, 5, 3, 0, 4, 1)), (batch, depth, height, width))


def _tap_major(xp, columns, channels: int, taps: int):
    """The peer's patches `[N, C*T, OH, OW]` (channel-major features) tap-major:
    `[N, T*C, OH, OW]`."""
    batch, _, height, width = columns.shape
    split = xp.reshape(columns, (batch, channels, taps, height, width))
    moved = xp.permute(split, (0, 2, 1, 3, 4))
    return xp.reshape(moved, (batch, taps * channels, height, width))


def _emit_im2col(xp, images, *, window):
    channels = images.shape[1]
    columns = _tap_major(xp, xp.patches(images, window), channels, window.taps)
    return emitted_rows(xp, columns, window.phases)


def _emit_col2im(xp, patches, *, shape, window):
    batch, channels, height, width = shape
    out_height, out_width = window.output_extents(height, width)
    columns = emitted_images(xp, patches, batch, out_height, out_width, window.phases)
    # tap-major back to the peer's channel-major features
    channel_major = _tap_major(xp, columns, window.taps, channels)
    return xp.patches_adjoint(channel_major, window, shape)


declare_emission("im2col", _emit_im2col)
declare_emission("col2im", _emit_col2im)

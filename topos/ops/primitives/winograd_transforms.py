"""winograd_input and winograd_output, and their adjoints winograd_input_adjoint and
winograd_output_adjoint: the tile transforms of Winograd's F(4x4, 3x3), by which a 3x3
"same" convolution at stride 1 becomes 36 matrix products over channels.

Each 4x4 tile of the output is computed from the 6x6 tile of the zero-padded images
under it: with the transforms `B^T` (6x6), `G` (6x3) and `A^T` (4x6),
`Y = A^T [sum over c of (G g G^T) * (B^T d B)] A`. `conv2d` records it as a composite
(`Conv2d(..., algorithm="winograd")`):

- `winograd_input(images [N, C, H, W])`: `B^T d B` of every 6x6 tile `d`, as
  `[36, T, C]` (position, tile, channel; T = N * H/4 * W/4 tiles in image, tile-row,
  tile-column order).
- the kernel's transform `G g G^T` is a product with a constant (`[36, 9] @ [9, C*F]`)
  and the 36 products over channels one batched `matmul`, `[36, T, C] @ [36, C, F]`:
  ordinary primitives, whose rules make their gradients.
- `winograd_output(products [36, T, F])`: `A^T m A` of every tile's products, placed
  as the convolution's rows `[N*H*W, F]`, in pixel order or phase-major (`window.phases`
  2 or 4, the order of `im2col(..., phases=P)`), so pooling reads them where they lie.

The two transforms are linear maps, and each adjoint is the other's derivative rule:
`winograd_output_adjoint(rows)` gathers a gradient's tiles and applies `A (.) A^T`,
`winograd_input_adjoint(tiles)` applies `B (.) B^T` and adds the tiles back onto the
images where they overlap (as col2im does for im2col). The two-sided transforms are
single products with Kronecker matrices (`B^T (x) B^T`, 36x36; `A^T (x) A^T`, 16x36)
over every tile and channel at once: one BLAS call each.

The window must be 3x3 at stride 1 padded by 1, the images' sides multiples of 4.
Winograd is exact in exact arithmetic only: in float32 its transforms' large
coefficients make its rounding errors some ten times the direct form's (README,
performance section), which is why it is an algorithm a model opts into.

Every kernel copies its operand into buffers of its own layout and calls BLAS on them
the same way, so the bits are a pure function of the operand's values and shape, and
the routes, which call the same kernels, agree bit for bit.
"""

from __future__ import annotations

import functools

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, recorded, window
from topos.ops.memory_order import Layout
from topos.ops.memory_rules import MemoryRules
from topos.ops.patch_window import PatchWindow
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import fail
from topos.tensor import Shape

#: The input transform `B^T`, the kernel transform `G` and the output transform `A^T` of
#: F(4x4, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks",
#: 2016), interpolating at 0, +-1, +-2 and infinity.
INPUT_TRANSFORM = np.array(
    [
        [4, 0, -5, 0, 1, 0],
        [0, -4, -4, 1, 1, 0],
        [0, 4, -4, -1, 1, 0],
        [0, -2, -1, 2, 1, 0],
        [0, 2, -1, -2, 1, 0],
        [0, 4, 0, -5, 0, 1],
    ],
    dtype=np.float64,
)
KERNEL_TRANSFORM = np.array(
    [
        [1 / 4, 0, 0],
        [-1 / 6, -1 / 6, -1 / 6],
        [-1 / 6, 1 / 6, -1 / 6],
        [1 / 24, 1 / 12, 1 / 6],
        [1 / 24, -1 / 12, 1 / 6],
        [0, 0, 1],
    ],
    dtype=np.float64,
)
OUTPUT_TRANSFORM = np.array(
    [
        [1, 1, 1, 1, 1, 0],
        [0, 1, -1, 2, -2, 0],
        [0, 1, 1, 4, 4, 0],
        [0, 1, -1, 8, -8, 1],
    ],
    dtype=np.float64,
)

#: The output tile's side and the input tile's (the output's plus the kernel's 2).
TILE = 4
INPUT_TILE = 6
#: Transformed positions per tile (6 x 6).
POSITIONS = INPUT_TILE * INPUT_TILE

#: `g -> G g G^T` on every flattened 3x3 kernel at once: `KERNEL_PRODUCT @ g`, `[36, 9]`
#: (row-major flattening: `M X M^T` flattened is `kron(M, M) @ X` flattened).
KERNEL_PRODUCT = np.kron(KERNEL_TRANSFORM, KERNEL_TRANSFORM)

#: The two-sided transforms as one matrix each, so one product transforms every tile and
#: channel: in the cifar10 step this beat the separable form (two products of 6x6 a
#: transform, whole or in cache-sized pieces), whose fewer multiplies cost more NumPy
#: calls (docs/performance/kernel-decisions.md).
_TWO_SIDED = {
    "input": np.kron(INPUT_TRANSFORM, INPUT_TRANSFORM),
    "output": np.kron(OUTPUT_TRANSFORM, OUTPUT_TRANSFORM),
}
_CAST: dict[tuple[str, bool, str], np.ndarray] = {}


def _transform(name: str, dtype: np.dtype, transposed: bool = False) -> np.ndarray:
    """Two-sided transform `name` (`input` 36x36, `output` 16x36) in `dtype`,
    C-contiguous also when `transposed`, rounded once from float64 and kept."""
    key = (name, transposed, np.dtype(dtype).str)
    matrix = _CAST.get(key)
    if matrix is None:
        full = _TWO_SIDED[name].T if transposed else _TWO_SIDED[name]
        matrix = np.ascontiguousarray(full, dtype=dtype)
        matrix.flags.writeable = False
        _CAST[key] = matrix
    return matrix


# Shape rules ---------------------------------------------------------------------------


def _check_window(operation: str, window: PatchWindow) -> None:
    if not isinstance(window, PatchWindow):
        raise fail(operation, f"window {window!r} must be a PatchWindow")
    if (window.kernel_height, window.kernel_width, window.stride, window.padding) != (3, 3, 1, 1):
        raise fail(operation, f"window ({window}) must be 3x3 at stride 1 padded by 1")
    if window.phases not in (1, 2, 4):
        raise fail(operation, f"window ({window}) must have phases 1, 2 or 4")


def _check_sides(operation: str, what: str, height: int, width: int) -> None:
    if height < TILE or width < TILE or height % TILE or width % TILE:
        raise fail(operation, f"{what} must be at least 4x4 and tile into 4x4 blocks")


def tile_count(batch: int, height: int, width: int) -> int:
    """The 4x4 output tiles of `batch` images of `height x width` (sides multiples of 4)."""
    return batch * (height // TILE) * (width // TILE)


def _infer_input(images: Shape, window: PatchWindow) -> Shape:
    _check_window("winograd_input", window)
    if images.rank != 4:
        raise fail("winograd_input", f"images {images} must be [N, C, H, W]")
    batch, channels, height, width = images
    _check_sides("winograd_input", f"images {images}", height, width)
    return Shape((POSITIONS, tile_count(batch, height, width), channels))


def _infer_input_adjoint(tiles: Shape, shape: tuple[int, ...], window: PatchWindow) -> Shape:
    _check_window("winograd_input_adjoint", window)
    if len(shape) != 4:
        raise fail("winograd_input_adjoint", f"images shape {list(shape)} must be [N, C, H, W]")
    batch, channels, height, width = shape
    _check_sides("winograd_input_adjoint", f"images shape {list(shape)}", height, width)
    expected = (POSITIONS, tile_count(batch, height, width), channels)
    if tiles != expected:
        raise fail(
            "winograd_input_adjoint",
            f"tiles {tiles} must be {list(expected)} for images {list(shape)}",
        )
    return Shape(shape)


def _check_pixels(operation: str, pixels: tuple[int, ...]) -> None:
    if len(pixels) != 3 or min(pixels) < 1:
        raise fail(operation, f"pixels {list(pixels)} must be positive [N, H, W]")
    _check_sides(operation, f"pixels {list(pixels)}", pixels[1], pixels[2])


def _infer_output(products: Shape, pixels: tuple[int, ...], window: PatchWindow) -> Shape:
    _check_window("winograd_output", window)
    _check_pixels("winograd_output", pixels)
    tiles = tile_count(*pixels)
    if products.rank != 3 or products[:2] != (POSITIONS, tiles):
        raise fail(
            "winograd_output",
            f"products {products} must be [{POSITIONS}, {tiles}, filters] for pixels "
            f"{list(pixels)}",
        )
    batch, height, width = pixels
    return Shape((batch * height * width, products[2]))


def _infer_output_adjoint(rows: Shape, pixels: tuple[int, ...], window: PatchWindow) -> Shape:
    _check_window("winograd_output_adjoint", window)
    _check_pixels("winograd_output_adjoint", pixels)
    batch, height, width = pixels
    if rows.rank != 2 or rows[0] != batch * height * width:
        raise fail(
            "winograd_output_adjoint",
            f"rows {rows} must be [{batch * height * width}, filters] for pixels {list(pixels)}",
        )
    return Shape((POSITIONS, tile_count(*pixels), rows[1]))


# Derivative rules: each transform's adjoint is the other's -----------------------------


def _derive_input(algebra, inputs, output, gradient, needs, window):
    shape = tuple(algebra.shape(inputs[0]))
    return (algebra.winograd_input_adjoint(gradient, shape=shape, window=window),)


def _derive_input_adjoint(algebra, inputs, output, gradient, needs, shape, window):
    return (algebra.winograd_input(gradient, window=window),)


def _derive_output(algebra, inputs, output, gradient, needs, pixels, window):
    return (algebra.winograd_output_adjoint(gradient, pixels=pixels, window=window),)


def _derive_output_adjoint(algebra, inputs, output, gradient, needs, pixels, window):
    return (algebra.winograd_output(gradient, pixels=pixels, window=window),)


# Sizes and layouts ---------------------------------------------------------------------


def _padded(batch: int, channels: int, height: int, width: int) -> int:
    """The zero-padded channels-last images: 1 before, 3 after each side, so that the last
    tile's 6 rows and columns lie inside."""
    return batch * (height + 4) * (width + 4) * channels


def _input_workspace(images: Shape, window: PatchWindow) -> int:
    """The padded images and the gathered tiles."""
    batch, channels, height, width = images
    gathered = POSITIONS * tile_count(batch, height, width) * channels
    return _padded(*images) + gathered


def _input_adjoint_workspace(tiles: Shape, shape: tuple[int, ...], window: PatchWindow) -> int:
    """The tiles' gradient (and a contiguous copy of the operand), then the padded
    accumulator."""
    return 2 * tiles.volume + _padded(*shape)


def _output_workspace(products: Shape, pixels: tuple[int, ...], window: PatchWindow) -> int:
    """The output tiles (and a contiguous copy of the operand)."""
    return TILE * TILE * products[1] * products[2] + products.volume


def _output_adjoint_workspace(rows: Shape, pixels: tuple[int, ...], window: PatchWindow) -> int:
    """The gradient's gathered tiles."""
    return rows.volume


def _channels_last(operand_layouts, operand_shapes, output, attributes) -> Layout:
    """The images' gradient is written channels-last, the order the layer below reads."""
    return (0, 2, 3, 1)


def winograd_flops(tiles: int, width: int, positions: int) -> int:
    """The FLOPs of one two-sided transform of `tiles` tiles of `width` channels or filters
    to or from `positions` positions (two a multiply-add, the Kronecker matrix's 36 by
    `positions`): the remat schedule's cost."""
    return 2 * POSITIONS * positions * tiles * width


# Kernels -------------------------------------------------------------------------------


def _regions(workspace, dtype, *sizes: int) -> list[np.ndarray]:
    """Consecutive flat regions of `workspace` (allocated when there is none) of `sizes`."""
    total = sum(sizes)
    if workspace is None or workspace.size < total:
        workspace = np.empty(total, dtype=dtype)
    regions, start = [], 0
    for size in sizes:
        regions.append(workspace[start : start + size])
        start += size
    return regions


def _contiguous(operand: np.ndarray, region: np.ndarray) -> np.ndarray:
    """`operand` C-contiguous: itself, or its copy in `region`."""
    if operand.flags.c_contiguous:
        return operand
    copy = region[: operand.size].reshape(operand.shape)
    np.copyto(copy, operand)
    return copy


def _target(out, shape: tuple[int, ...], dtype) -> np.ndarray:
    """Where a kernel writes its output: `out` when it is C-contiguous (as the memory plan
    lays it out), else a new array, copied into `out` by `_delivered`."""
    if out is not None and out.flags.c_contiguous:
        return out
    return np.empty(shape, dtype=dtype)


def _delivered(target: np.ndarray, out) -> np.ndarray:
    """The output: `target`, copied into `out` first when `out` is another array."""
    if out is None or out is target:
        return target
    np.copyto(out, target)
    return out


def _tile_blocks(padded: np.ndarray, tile_rows: int, tile_columns: int):
    """The four views of the padded channels-last images `[N, 4TH+4, 4TW+4, C]` that
    together hold every tile's 6x6 window, as `(i, j, view [N, TH, i-extent, TW,
    j-extent, C])` with `i` and `j` the tile row and column where the view starts: tile
    rows 0-3 are the padded rows 4ty..4ty+3 (a reshape of the first 4TH rows), tile rows
    4-5 are 4ty+4..4ty+5 (of the rows from 4 on); columns alike. Views, so they can be
    written."""
    batch, _, width, channels = padded.shape
    for start, extent in ((0, TILE), (TILE, INPUT_TILE - TILE)):
        rows = padded[:, start : start + TILE * tile_rows]
        rows = rows.reshape(batch, tile_rows, TILE, width, channels)[:, :, :extent]
        for column, span in ((0, TILE), (TILE, INPUT_TILE - TILE)):
            block = rows[:, :, :, column : column + TILE * tile_columns]
            block = block.reshape(batch, tile_rows, extent, tile_columns, TILE, channels)
            yield start, column, block[:, :, :, :, :span]


def _by_position(flat: np.ndarray, batch: int, height: int, width: int, channels: int):
    """Tiles `[36, T, C]` (flat) as `[6, 6, N, TH, TW, C]`."""
    return flat.reshape(INPUT_TILE, INPUT_TILE, batch, height // TILE, width // TILE, channels)


@primitive(
    "winograd_input",
    1,
    _infer_input,
    _derive_input,
    memory=MemoryRules(workspace=_input_workspace),
    flops=lambda output, images, **_: winograd_flops(output[1], images[1], POSITIONS),
)
def winograd_input(images, out=None, workspace=None, *, window: PatchWindow):
    """`B^T d B` of every 6x6 tile `d` of the images zero-padded by 1, `[36, T, C]`."""
    batch, channels, height, width = images.shape
    tiles = tile_count(batch, height, width)
    padded, gathered = _regions(
        workspace,
        images.dtype,
        _padded(batch, channels, height, width),
        POSITIONS * tiles * channels,
    )
    padded = padded.reshape(batch, height + 4, width + 4, channels)
    # The border only: the interior is overwritten by the images.
    padded[:, 0] = 0
    padded[:, height + 1 :] = 0
    padded[:, 1 : height + 1, 0] = 0
    padded[:, 1 : height + 1, width + 1 :] = 0
    np.copyto(padded[:, 1 : height + 1, 1 : width + 1], images.transpose(0, 2, 3, 1))
    by_position = _by_position(gathered, batch, height, width, channels)
    for row, column, block in _tile_blocks(padded, height // TILE, width // TILE):
        rows, columns = block.shape[2], block.shape[4]
        target = by_position[row : row + rows, column : column + columns]
        np.copyto(target, block.transpose(2, 4, 0, 1, 3, 5))
    target = _target(out, (POSITIONS, tiles, channels), images.dtype)
    np.matmul(
        _transform("input", images.dtype),
        gathered.reshape(POSITIONS, -1),
        out=target.reshape(POSITIONS, -1),
    )
    return _delivered(target, out)


@primitive(
    "winograd_input_adjoint",
    1,
    _infer_input_adjoint,
    _derive_input_adjoint,
    memory=MemoryRules(workspace=_input_adjoint_workspace, layout=_channels_last),
    flops=lambda output, tiles, **_: winograd_flops(tiles[1], tiles[2], POSITIONS),
)
def winograd_input_adjoint(
    tiles, out=None, workspace=None, *, shape: tuple[int, ...], window: PatchWindow
):
    """`B x B^T` of every tile's `x` added back onto the pixels the tile covers (the
    padding dropped): the adjoint of `winograd_input`, `[N, C, H, W]` channels-last in
    memory."""
    batch, channels, height, width = shape
    copy, untransformed, padded = _regions(
        workspace, tiles.dtype, tiles.size, tiles.size, _padded(*shape)
    )
    operand = _contiguous(tiles, copy)
    np.matmul(
        _transform("input", tiles.dtype, transposed=True),
        operand.reshape(POSITIONS, -1),
        out=untransformed.reshape(POSITIONS, -1),
    )
    by_position = _by_position(untransformed, batch, height, width, channels)
    padded = padded.reshape(batch, height + 4, width + 4, channels)
    # The first block (rows and columns 0-3 of every tile) covers the padded images'
    # first H x W pixels once each: copied; the border past them zeroed; then the
    # overlapping blocks added, always in the same order.
    padded[:, height:] = 0
    padded[:, :height, width:] = 0
    for row, column, block in _tile_blocks(padded, height // TILE, width // TILE):
        rows, columns = block.shape[2], block.shape[4]
        source = by_position[row : row + rows, column : column + columns]
        source = source.transpose(2, 3, 0, 4, 1, 5)
        if row == column == 0:
            np.copyto(block, source)
        else:
            np.add(block, source, out=block)
    interior = padded[:, 1 : height + 1, 1 : width + 1].transpose(0, 3, 1, 2)
    if out is None:
        out = np.empty((batch, height, width, channels), dtype=tiles.dtype).transpose(0, 3, 1, 2)
    np.copyto(out, interior)
    return out


def _placed(rows: np.ndarray, tiles: np.ndarray, pixels: tuple[int, ...], phases: int):
    """The convolution's rows `[N*H*W, F]` (in `phases` order) and the output tiles `[16,
    T, F]` as two views of one shape, `[P, P, N, TH, 4/P, TW, 4/P, F]`, to copy one into
    the other: output pixel `(4ty + a, 4tx + b)` with `a = P*a' + py`, `b = P*b' + px`
    is row `((py*P + px)*N + n)*(H/P * W/P) + (y // P)*(W/P) + x // P`."""
    batch, height, width = pixels
    filters = rows.shape[1]
    tile_rows, tile_columns = height // TILE, width // TILE
    inner = TILE // phases
    by_row = rows.reshape(phases, phases, batch, tile_rows, inner, tile_columns, inner, filters)
    by_tile = tiles.reshape(inner, phases, inner, phases, batch, tile_rows, tile_columns, filters)
    return by_row, by_tile.transpose(1, 3, 4, 5, 0, 6, 2, 7)


@primitive(
    "winograd_output",
    1,
    _infer_output,
    _derive_output,
    memory=MemoryRules(workspace=_output_workspace),
    flops=lambda output, products, **_: winograd_flops(products[1], products[2], TILE * TILE),
)
def winograd_output(
    products, out=None, workspace=None, *, pixels: tuple[int, ...], window: PatchWindow
):
    """`A^T m A` of every tile's transformed products `m` (`[36, T, F]`), placed as the
    convolution's rows `[N*H*W, F]` (phase-major when `window.phases > 1`)."""
    _, tiles, filters = products.shape
    output_tiles, copy = _regions(
        workspace, products.dtype, TILE * TILE * tiles * filters, products.size
    )
    operand = _contiguous(products, copy)
    output_tiles = output_tiles.reshape(TILE * TILE, -1)
    np.matmul(
        _transform("output", products.dtype), operand.reshape(POSITIONS, -1), out=output_tiles
    )
    batch, height, width = pixels
    target = _target(out, (batch * height * width, filters), products.dtype)
    by_row, by_tile = _placed(target, output_tiles, pixels, window.phases)
    np.copyto(by_row, by_tile)
    return _delivered(target, out)


@primitive(
    "winograd_output_adjoint",
    1,
    _infer_output_adjoint,
    _derive_output_adjoint,
    memory=MemoryRules(workspace=_output_adjoint_workspace),
    flops=lambda output, rows, **_: winograd_flops(output[1], output[2], TILE * TILE),
)
def winograd_output_adjoint(
    rows, out=None, workspace=None, *, pixels: tuple[int, ...], window: PatchWindow
):
    """`A y A^T` of every output tile `y` of the rows `[N*H*W, F]` (in `window.phases`
    order), `[36, T, F]`: the adjoint of `winograd_output`."""
    filters = rows.shape[1]
    tiles = tile_count(*pixels)
    (gathered,) = _regions(workspace, rows.dtype, rows.size)
    gathered = gathered.reshape(TILE * TILE, tiles, filters)
    by_row, by_tile = _placed(rows, gathered, pixels, window.phases)
    np.copyto(by_tile, by_row)
    target = _target(out, (POSITIONS, tiles, filters), rows.dtype)
    np.matmul(
        _transform("output", rows.dtype, transposed=True),
        gathered.reshape(TILE * TILE, -1),
        out=target.reshape(POSITIONS, -1),
    )
    return _delivered(target, out)


def _winograd_example(name: str, subject: str, operand, **attributes) -> Example:
    """One Winograd transform over a varying operand of shape `operand`, drawn small: the
    transforms multiply by up to 64, and the loss's size is what rounds a finite
    difference."""

    def draw(rng):
        return [rng.standard_normal(operand) / 16]

    return Example(name, draw, recorded(subject, **attributes))


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "winograd_input",
    _winograd_example("winograd_input", "winograd_input", (2, 2, 4, 8), **window()),
)

declare_examples(
    "winograd_input_adjoint",
    _winograd_example(
        "winograd_input_adjoint",
        "winograd_input_adjoint",
        (36, 4, 2),
        shape=(2, 2, 4, 8),
        **window(),
    ),
)

declare_examples(
    "winograd_output",
    _winograd_example(
        "winograd_output", "winograd_output", (36, 4, 3), pixels=(2, 8, 4), **window()
    ),
    _winograd_example(
        "winograd_output_phases2",
        "winograd_output",
        (36, 4, 3),
        pixels=(1, 8, 8),
        **window(phases=2),
    ),
)

declare_examples(
    "winograd_output_adjoint",
    _winograd_example(
        "winograd_output_adjoint_phases4",
        "winograd_output_adjoint",
        (64, 3),
        pixels=(1, 8, 8),
        **window(phases=4),
    ),
    _winograd_example(
        "winograd_output_adjoint",
        "winograd_output_adjoint",
        (32, 2),
        pixels=(2, 4, 4),
        **window(),
    ),
)


# Emission: each transform as a gather of tiles (or a placement of rows) and one product
# with its Kronecker matrix; the maps come from the kernels themselves ------------------


@functools.lru_cache(maxsize=64)
def _tile_map(shape: tuple[int, ...], window: PatchWindow) -> np.ndarray:
    """`[36, T, C]`: 1 + the flat index of the image pixel at each tile position (0 in the
    padding), found by undoing `B^T (.) B` on winograd_input of the numbers 1..n."""
    numbers = np.arange(1, int(np.prod(shape)) + 1, dtype=np.float64).reshape(shape)
    transformed = winograd_input.kernel(numbers, window=window)
    undone = np.linalg.solve(_TWO_SIDED["input"], transformed.reshape(POSITIONS, -1))
    mapped = np.rint(undone).astype(np.int64).reshape(transformed.shape)
    mapped.setflags(write=False)
    return mapped


@functools.lru_cache(maxsize=64)
def _row_map(tiles: int, filters: int, pixels: tuple[int, ...], window: PatchWindow) -> np.ndarray:
    """`[N*H*W, F]`: 1 + the flat index into the `[16, T, F]` output tiles each row entry
    is placed from, found by running winograd_output on products whose transform is the
    numbers 1..n (`A^T (.) A` has full row rank, so a right inverse makes them)."""
    count = TILE * TILE * tiles * filters
    numbers = np.arange(1, count + 1, dtype=np.float64).reshape(TILE * TILE, -1)
    products = (np.linalg.pinv(_TWO_SIDED["output"]) @ numbers).reshape(POSITIONS, tiles, filters)
    placed = winograd_output.kernel(products, pixels=pixels, window=window)
    mapped = np.rint(placed).astype(np.int64)
    mapped.setflags(write=False)
    return mapped


def _mix(xp, matrix: np.ndarray, values):
    """`matrix @ values` over `values`' first axis, the rest kept."""
    rest = tuple(values.shape[1:])
    flat = xp.reshape(values, (values.shape[0], -1))
    return xp.reshape(xp.matmul(xp.constant(matrix), flat), (matrix.shape[0], *rest))


def _emit_input(xp, images, *, window):
    tiles = xp.take_flat(images, _tile_map(tuple(images.shape), window))
    return _mix(xp, _TWO_SIDED["input"], tiles)


def _emit_input_adjoint(xp, tiles, *, shape, window):
    spread = _mix(xp, _TWO_SIDED["input"].T, tiles)
    return xp.scatter_flat(spread, _tile_map(tuple(shape), window), shape)


def _emit_output(xp, products, *, pixels, window):
    _, tiles, filters = products.shape
    placed = _mix(xp, _TWO_SIDED["output"], products)
    return xp.take_flat(placed, _row_map(tiles, filters, tuple(pixels), window))


def _emit_output_adjoint(xp, rows, *, pixels, window):
    tiles, filters = tile_count(*pixels), rows.shape[-1]
    where = _row_map(tiles, filters, tuple(pixels), window)
    gathered = xp.scatter_flat(rows, where, (TILE * TILE, tiles, filters))
    return _mix(xp, _TWO_SIDED["output"].T, gathered)


declare_emission("winograd_input", _emit_input)
declare_emission("winograd_input_adjoint", _emit_input_adjoint)
declare_emission("winograd_output", _emit_output)
declare_emission("winograd_output_adjoint", _emit_output_adjoint)

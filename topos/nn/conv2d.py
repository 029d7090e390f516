"""conv2d, conv2d_max_pool and Conv2d: 2-D convolution composed from im2col, matmul and bias
(and max pooling over the product's phases), or by Winograd's F(4x4, 3x3) where a layer
opts into it."""

from __future__ import annotations

from topos.errors import ShapeError
from topos.graph.tape import Tape
from topos.graph.value import Value
from topos.nn.weighted_layer import WeightedLayer
from topos.ops.patch_window import PatchWindow
from topos.ops.primitives.winograd_transforms import KERNEL_PRODUCT, POSITIONS, TILE
from topos.tensor import Shape, Tensor

#: The algorithms a convolution can be computed by: `direct` (im2col and one matrix
#: product, the default) or `winograd` (F(4x4, 3x3): fewer multiplies, more rounding).
ALGORITHMS = ("direct", "winograd")

#: The fewest input channels for which `Conv2d(..., algorithm="winograd")` uses Winograd:
#: below them its transforms cost more than the products it saves (a cifar10 step
#: measured no gain on its 3-channel first layer; README, performance section).
WINOGRAD_FEWEST_CHANNELS = 16


def winograd_applies(
    images: Shape, weights: Shape, stride: int = 1, padding: int = 0, pool: int = 1
) -> bool:
    """Whether F(4x4, 3x3) can compute this convolution (and pooling): a 3x3 kernel at
    stride 1 padded by 1 (the images keep their size), sides multiples of 4, and a pool
    of 1, 2 or 4 (so each pooling window lies inside one 4x4 tile)."""
    return (
        images.rank == 4
        and weights.rank == 4
        and tuple(weights[2:]) == (3, 3)
        and (stride, padding) == (1, 1)
        and images[2] >= TILE
        and images[3] >= TILE
        and images[2] % TILE == 0
        and images[3] % TILE == 0
        and pool in (1, 2, 4)
    )


def _check_algorithm(composite: str, algorithm: str) -> None:
    if algorithm not in ALGORITHMS:
        raise ValueError(
            f"{composite}: algorithm {algorithm!r} is not one of {', '.join(ALGORITHMS)}"
        )


def conv2d(
    images: Value,
    weights: Value,
    bias: Value | None = None,
    stride: int = 1,
    padding: int = 0,
    algorithm: str = "direct",
) -> Value:
    """Convolves `images [N, C, H, W]` with `weights [F, C, KH, KW]` plus `bias [F]` (or
    no bias, when None), giving `[N, F, OH, OW]`: the im2col patch matrix times the
    kernel matrix.

    A composite: it records primitives only, so it needs no derivative rule of its
    own. `im2col` (one node for what pad, two unfolds, a permute and a reshape
    would say) is tap-major, `[N*OH*OW, KH*KW*C]`, so the kernel matrix is the
    weights permuted to `[KH, KW, C, F]`. The product is a `convolution` node, which
    records the images beside the patches: its derivative makes the kernel's
    gradient from the patches (`convolution_kernel`) and the images' gradient in one kernel,
    tap by tap (`convolution_images`), so im2col's adjoint (`col2im`) never runs.

    With `algorithm="winograd"` the product is Winograd's F(4x4, 3x3) instead (see
    `winograd_product`): only where `winograd_applies`, else a ShapeError.
    """
    scores, (batch, out_height, out_width) = _scores(
        "conv2d", images, weights, bias, stride, padding, algorithm=algorithm
    )
    filters = weights.shape[0]
    return scores.reshape(batch, out_height, out_width, filters).permute(0, 3, 1, 2)


def conv2d_max_pool(
    images: Value,
    weights: Value,
    bias: Value | None,
    stride: int = 1,
    padding: int = 0,
    pool: int = 2,
    algorithm: str = "direct",
) -> Value:
    """`max_pool(conv2d(images, weights, bias, stride, padding), pool, pool)`, recorded
    so that the pooling reads the product where it lies: `[N, F, OH / pool, OW / pool]`.

    The product `[N*OH*OW, F]` is reshaped (no copy) so that each window's lanes are
    axes of their own, and pooled by `lane_max` over its `lane_argmax` winners. The
    lanes are compared in the same order as max_pool's. The bias is added to the pooled
    rows, a `pool * pool`-th of the product's: adding a number rounds monotonically, so
    the largest of `x + b` is the largest `x` plus `b`, the same float. Over trained
    images the product is conv2d's own, so the values are the composed form's bits;
    the images' gradient is too, except where the rounding of `x + b` ties lanes that
    `x` does not (the composed form then routes to the earliest of the tied lanes, this
    one to the larger `x`: both are the gradient of a window's maximum); the weights'
    and bias's gradients agree to float32 rounding (their sums over rows are
    regrouped). The pooled rows are channels-last in memory, the order the next im2col
    reads.

    The patch rows are phase-major (`im2col(..., phases=pool)`) when nothing needs
    col2im of them: when the images are an input or a leaf of the tape (a model does not
    train them), or when the convolution keeps the images' size at stride 1, whose
    images' gradient `convolution_images` makes from phase-major rows too. Each lane is
    then one contiguous block, which pools two to three times faster than lanes of F
    values strided through the product. That is another product, so the values agree
    with the composed form's to rounding.

    With `algorithm="winograd"` the product is Winograd's, its rows phase-major
    (`winograd_product`): only where `winograd_applies`, else a ShapeError.
    """
    source = images.tape.nodes[images.index].operation in ("input", "leaf")
    same_size = stride == 1 and 2 * padding == weights.shape[2] - 1 == weights.shape[3] - 1
    phases = pool if source or same_size else 1
    product, (batch, out_height, out_width) = _scores(
        "conv2d_max_pool", images, weights, None, stride, padding, pool, phases, bias, algorithm
    )
    filters = weights.shape[0]
    pooled_height, pooled_width = out_height // pool, out_width // pool
    pooled_rows = batch * pooled_height * pooled_width
    if phases == pool:
        lanes = product.reshape(pool * pool, pooled_rows, filters)
        axes = (0,)
    else:
        lanes = product.reshape(batch, pooled_height, pool, pooled_width, pool, filters)
        axes = (2, 4)
    # The winners are found in the forward pass, so the backward keeps them, not the
    # four times larger product.
    winners = images.tape.record("lane_argmax", (lanes,), axes=axes)
    pooled = images.tape.record("lane_max", (lanes, winners), axes=axes)
    if bias is not None:
        if pooled.shape != (pooled_rows, filters):
            pooled = pooled.reshape(pooled_rows, filters)
        pooled = pooled + bias.broadcast_along(0, pooled_rows)
    pooled = pooled.reshape(batch, pooled_height, pooled_width, filters)
    return pooled.permute(0, 3, 1, 2)


def _scores(
    composite: str,
    images: Value,
    weights: Value,
    bias: Value | None,
    stride: int,
    padding: int,
    pool: int = 1,
    phases: int = 1,
    pooled_bias: Value | None = None,
    algorithm: str = "direct",
) -> tuple[Value, tuple[int, int, int]]:
    """The patch matrix times the kernel matrix plus the bias, `[N*OH*OW, F]` (rows
    phase-major when `phases > 1`), and `(N, OH, OW)`; `pooled_bias` is a bias the
    caller adds after pooling, checked here beside the rest. With `algorithm`
    "winograd", the same product by `winograd_product`."""
    _check_algorithm(composite, algorithm)
    checked = bias if pooled_bias is None else pooled_bias
    if (
        images.shape.rank != 4
        or weights.shape.rank != 4
        or (checked is not None and checked.shape.rank != 1)
    ):
        described = "no bias" if checked is None else f"bias {checked.shape}"
        raise ShapeError(
            f"{composite}: images {images.shape}, weights {weights.shape} and "
            f"{described} must be [N, C, H, W], [F, C, KH, KW] and [F]"
        )
    batch, channels, _, _ = images.shape
    filters, weight_channels, kernel_height, kernel_width = weights.shape
    if weight_channels != channels:
        raise ShapeError(
            f"{composite}: weights {weights.shape} expect {weight_channels} channels, "
            f"images {images.shape} have {channels}"
        )
    if checked is not None and checked.shape[0] != filters:
        raise ShapeError(f"{composite}: bias {checked.shape} for {filters} filters")
    if pool < 1:
        raise ShapeError(f"{composite}: pool {pool} must be positive")
    if stride < 1 or padding < 0:
        raise ShapeError(
            f"{composite}: stride {stride} must be at least 1 and padding {padding} at least 0"
        )
    window = PatchWindow(kernel_height, kernel_width, stride, padding, phases)
    out_height, out_width = window.output_extents(images.shape[2], images.shape[3])
    if out_height >= 1 and out_width >= 1 and (out_height % pool or out_width % pool):
        raise ShapeError(
            f"{composite}: a {pool}x{pool} pool does not tile the convolution's "
            f"{out_height}x{out_width} output of images {images.shape}"
        )
    if algorithm == "winograd":
        if not winograd_applies(images.shape, weights.shape, stride, padding, pool):
            raise ShapeError(
                f"{composite}: Winograd F(4x4, 3x3) needs a 3x3 kernel at stride 1 padded by "
                f"1 over sides that are multiples of 4 (and a pool of 1, 2 or 4): images "
                f"{images.shape}, weights {weights.shape}, stride {stride}, padding "
                f"{padding}, pool {pool}"
            )
        product = winograd_product(images, weights, window)
    else:
        columns = images.tape.record("im2col", (images,), window=window)
        kernel = weights.permute(2, 3, 1, 0).reshape(
            kernel_height * kernel_width * channels, filters
        )
        # The product records the images too, so its rule makes their gradient in one
        # kernel (convolution_images) and im2col's adjoint never runs.
        product = images.tape.record("convolution", (columns, kernel, images), window=window)
    rows = product.shape[0]
    if bias is None:
        return product, (batch, out_height, out_width)
    scores = product + bias.broadcast_along(0, rows)
    return scores, (batch, out_height, out_width)


def winograd_product(images: Value, weights: Value, window: PatchWindow) -> Value:
    """The convolution's product `[N*H*W, F]` (rows in `window.phases` order) by Winograd's
    F(4x4, 3x3), as a composite: the images' transformed tiles (`winograd_input`,
    `[36, T, C]`), the kernel's transform `G g G^T` as a product with a constant `[36, 9]`,
    the 36 products over channels as one batched matmul (`[36, T, C] @ [36, C, F]`) and
    the output transform placed as rows (`winograd_output`). Its rules are those
    primitives': the transforms' adjoints and the products' own, so the backward pass
    transforms the product's gradient once and both gradients share it."""
    tape = images.tape
    batch, channels, height, width = images.shape
    filters = weights.shape[0]
    tiles = tape.record("winograd_input", (images,), window=window)
    kernel = weights.permute(2, 3, 1, 0).reshape(9, channels * filters)
    transform = tape.leaf(Tensor(KERNEL_PRODUCT.shape, KERNEL_PRODUCT, dtype=tape.dtype))
    transformed_kernel = (transform @ kernel).reshape(POSITIONS, channels, filters)
    products = tiles @ transformed_kernel
    pixels = (batch, height, width)
    return tape.record("winograd_output", (products,), pixels=pixels, window=window)


class Conv2d(WeightedLayer):
    """A convolution layer: PyTorch-shaped weights `[filters, channels, kh, kw]` and bias
    (named `<name>.weight` and `<name>.bias` when the layer has a name).

    `algorithm="winograd"` opts into Winograd's F(4x4, 3x3) wherever it applies and pays:
    `winograd_applies` to the images it is given and at least
    `WINOGRAD_FEWEST_CHANNELS` input channels; elsewhere the layer stays direct. It
    computes the same function to float32 rounding, which is some ten times coarser
    than the direct form's (README, performance section)."""

    def __init__(
        self,
        tape: Tape,
        weights: Tensor,
        bias: Tensor | None = None,
        stride: int = 1,
        padding: int = 0,
        name: str | None = None,
        algorithm: str = "direct",
    ) -> None:
        if weights.shape.rank != 4 or (bias is not None and bias.shape != (weights.shape[0],)):
            described = "no bias" if bias is None else f"bias {bias.shape}"
            raise ShapeError(
                f"Conv2d: weights {weights.shape} and {described} must be "
                f"[filters, channels, kh, kw] and [filters]"
            )
        if stride < 1 or padding < 0:
            raise ValueError(f"Conv2d: stride {stride} must be positive, padding {padding} >= 0")
        _check_algorithm("Conv2d", algorithm)
        super().__init__(tape, weights, bias, name)
        self.stride = stride
        self.padding = padding
        self.algorithm = algorithm

    def algorithm_for(self, images: Shape, pool: int = 1) -> str:
        """The algorithm this layer computes a convolution of `images` (max pooled over
        `pool x pool` tiles) by: Winograd only where it was asked for, applies and pays."""
        if self.algorithm == "winograd":
            weights = self._weights.shape
            applies = winograd_applies(images, weights, self.stride, self.padding, pool)
            if applies and weights[1] >= WINOGRAD_FEWEST_CHANNELS:
                return "winograd"
        return "direct"

    def express(self, value: Value) -> Value:
        """Records the convolution of `value`."""
        algorithm = self.algorithm_for(value.shape)
        return conv2d(value, self._weights, self._bias, self.stride, self.padding, algorithm)

    def express_max_pooled(self, value: Value, pool: int) -> Value:
        """Records the convolution of `value` max pooled over `pool x pool` tiles
        (`conv2d_max_pool`)."""
        algorithm = self.algorithm_for(value.shape, pool)
        return conv2d_max_pool(
            value, self._weights, self._bias, self.stride, self.padding, pool, algorithm
        )

"""conv2d and Conv2d: a 2-D convolution composed from im2col, permute, reshape and matmul."""

from __future__ import annotations

from topos.errors import ShapeError
from topos.graph.tape import Tape
from topos.graph.value import Value
from topos.nn.weighted_layer import WeightedLayer
from topos.ops.convolution import output_extent
from topos.tensor import Tensor


def conv2d(images: Value, weights: Value, bias: Value, stride: int = 1, padding: int = 0) -> Value:
    """Convolves `images [N, C, H, W]` with `weights [F, C, KH, KW]` plus `bias [F]`,
    giving `[N, F, OH, OW]`: the im2col patch matrix times the kernel matrix.

    A composite: it records primitives only, so it needs no derivative rule of its
    own. `im2col` (one node for what pad, two unfolds, a permute and a reshape
    would say) is tap-major, `[N*OH*OW, KH*KW*C]`, so the kernel matrix is the
    weights permuted to `[KH, KW, C, F]`; the product's derivative reads both
    operands transposed without copying them (`matmul_tn`, `matmul_nt`), and
    im2col's adjoint, `col2im`, is the backward pass's accumulation.
    """
    if images.shape.rank != 4 or weights.shape.rank != 4 or bias.shape.rank != 1:
        raise ShapeError(
            f"conv2d: images {images.shape}, weights {weights.shape} and bias {bias.shape} "
            f"must be [N, C, H, W], [F, C, KH, KW] and [F]"
        )
    batch, channels, _, _ = images.shape
    filters, weight_channels, kernel_height, kernel_width = weights.shape
    if weight_channels != channels:
        raise ShapeError(
            f"conv2d: weights {weights.shape} expect {weight_channels} channels, "
            f"images {images.shape} have {channels}"
        )
    if bias.shape[0] != filters:
        raise ShapeError(f"conv2d: bias {bias.shape} for {filters} filters")
    columns = images.tape.record(
        "im2col",
        (images,),
        kernel_height=kernel_height,
        kernel_width=kernel_width,
        stride=stride,
        padding=padding,
    )
    rows = columns.shape[0]
    out_height = output_extent(images.shape[2], kernel_height, stride, padding)
    out_width = output_extent(images.shape[3], kernel_width, stride, padding)
    kernel = weights.permute(2, 3, 1, 0).reshape(kernel_height * kernel_width * channels, filters)
    scores = columns @ kernel + bias.broadcast_along(0, rows)
    return scores.reshape(batch, out_height, out_width, filters).permute(0, 3, 1, 2)


class Conv2d(WeightedLayer):
    """A convolution layer: PyTorch-shaped weights `[filters, channels, kh, kw]` and bias."""

    def __init__(
        self, tape: Tape, weights: Tensor, bias: Tensor, stride: int = 1, padding: int = 0
    ) -> None:
        if weights.shape.rank != 4 or bias.shape != (weights.shape[0],):
            raise ShapeError(
                f"Conv2d: weights {weights.shape} and bias {bias.shape} must be "
                f"[filters, channels, kh, kw] and [filters]"
            )
        if stride < 1 or padding < 0:
            raise ValueError(f"Conv2d: stride {stride} must be positive, padding {padding} >= 0")
        super().__init__(tape, weights, bias)
        self.stride = stride
        self.padding = padding

    def express(self, value: Value) -> Value:
        """Records the convolution of `value`."""
        return conv2d(value, self._weights, self._bias, self.stride, self.padding)

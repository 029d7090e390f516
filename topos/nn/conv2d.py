"""conv2d and Conv2d: a 2-D convolution composed from pad, unfold, permute, reshape and matmul."""

from __future__ import annotations

from topos.errors import ShapeError
from topos.graph.symbol import Symbol
from topos.graph.tape import Tape
from topos.graph.value import Value
from topos.nn.module import Module
from topos.tensor import Tensor


def conv2d(images: Value, weights: Value, bias: Value, stride: int = 1, padding: int = 0) -> Value:
    """Convolves `images [N, C, H, W]` with `weights [F, C, KH, KW]` plus `bias [F]`,
    giving `[N, F, OH, OW]`: im2col by two unfolds, then one matrix product.

    A composite: it records primitives only, so it needs no derivative rule; the
    unfolds' adjoint, fold, is the col2im of the backward pass.
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
    padded = images
    if padding:
        padded = images.pad(((0, 0), (0, 0), (padding, padding), (padding, padding)))
    windows = padded.unfold(2, kernel_height, stride).unfold(3, kernel_width, stride)
    _, _, out_height, out_width, _, _ = windows.shape
    rows = batch * out_height * out_width
    columns = windows.permute(0, 2, 3, 1, 4, 5).reshape(
        rows, channels * kernel_height * kernel_width
    )
    kernel = weights.reshape(filters, channels * kernel_height * kernel_width).transpose()
    scores = columns @ kernel + bias.broadcast_along(0, rows)
    return scores.reshape(batch, out_height, out_width, filters).permute(0, 3, 1, 2)


class Conv2d(Module):
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
        self._weights = tape.parameter(weights)
        self._bias = tape.parameter(bias)
        self.stride = stride
        self.padding = padding

    @property
    def weights(self) -> Symbol:
        """The symbol of the weights parameter."""
        return self._weights.symbol

    @property
    def bias(self) -> Symbol:
        """The symbol of the bias parameter."""
        return self._bias.symbol

    def express(self, value: Value) -> Value:
        """Records the convolution of `value`."""
        return conv2d(value, self._weights, self._bias, self.stride, self.padding)

    def parameters(self) -> list[Symbol]:
        """Weights, then bias."""
        return [self.weights, self.bias]

"""conv1d and Conv1d: 1-D convolution over `[N, C, L]` sequences, recorded as a 2-D
convolution over images one pixel high."""

from __future__ import annotations

from topos.errors import ShapeError
from topos.graph.tape import Tape
from topos.graph.value import Value
from topos.nn.conv2d import conv2d
from topos.nn.weighted_layer import WeightedLayer
from topos.tensor import Tensor


def conv1d(
    input: Value,
    weight: Value,
    bias: Value | None = None,
    stride: int = 1,
    padding: int = 0,
) -> Value:
    """Convolves `input [N, C, L]` with `weight [F, C, K]` plus `bias [F]` (or none),
    giving `[N, F, OL]`: `torch.nn.functional.conv1d`. The sequence is padded along its
    length only, then convolved as `[N, C, 1, L]` by a `[F, C, 1, K]` kernel (`conv2d`)."""
    if input.shape.rank != 3 or weight.shape.rank != 3:
        raise ShapeError(
            f"conv1d: input {input.shape} and weight {weight.shape} must be [N, C, L] and [F, C, K]"
        )
    if stride < 1 or padding < 0:
        raise ShapeError(f"conv1d: stride {stride} must be positive, padding {padding} >= 0")
    if weight.shape[1] != input.shape[1]:
        raise ShapeError(
            f"conv1d: weight {weight.shape} expects {weight.shape[1]} channels, input "
            f"{input.shape} has {input.shape[1]}"
        )
    if padding:
        input = input.pad(((0, 0), (0, 0), (padding, padding)))
    batch, channels, length = input.shape
    filters, _, kernel = weight.shape
    if kernel > length:
        raise ShapeError(f"conv1d: a kernel of {kernel} is longer than the padded input {length}")
    images = input.reshape(batch, channels, 1, length)
    scores = conv2d(images, weight.reshape(filters, channels, 1, kernel), bias, stride)
    return scores.reshape(batch, filters, scores.shape[3])


class Conv1d(WeightedLayer):
    """A 1-D convolution layer: PyTorch-shaped weights `[filters, channels, k]` and bias
    (named `<name>.weight` and `<name>.bias` when the layer has a name)."""

    def __init__(
        self,
        tape: Tape,
        weights: Tensor,
        bias: Tensor | None = None,
        stride: int = 1,
        padding: int = 0,
        name: str | None = None,
    ) -> None:
        if weights.shape.rank != 3 or (bias is not None and bias.shape != (weights.shape[0],)):
            described = "no bias" if bias is None else f"bias {bias.shape}"
            raise ShapeError(
                f"Conv1d: weights {weights.shape} and {described} must be "
                f"[filters, channels, k] and [filters]"
            )
        if stride < 1 or padding < 0:
            raise ValueError(f"Conv1d: stride {stride} must be positive, padding {padding} >= 0")
        super().__init__(tape, weights, bias, name)
        self.stride = stride
        self.padding = padding

    def express(self, value: Value) -> Value:
        """Records the convolution of `value [N, C, L]`."""
        return conv1d(value, self._weights, self._bias, self.stride, self.padding)

"""avg_pool2d, adaptive_avg_pool2d and their layers: the mean of each window (global
average pooling is `adaptive_avg_pool2d(x, 1)`)."""

from __future__ import annotations

from topos.errors import ShapeError
from topos.graph.symbol import Symbol
from topos.graph.value import Value
from topos.nn.concat import concat
from topos.nn.module import Module


def _pair(name: str, value: int | tuple[int, int] | None, default: tuple[int, int]):
    if value is None:
        return default
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(each, int) for each in pair):
        raise ValueError(f"{name} must be an int or a pair of ints, not {value!r}")
    return pair


def avg_pool2d(
    input: Value,
    kernel_size: int | tuple[int, int],
    stride: int | tuple[int, int] | None = None,
    padding: int | tuple[int, int] = 0,
) -> Value:
    """The mean of each `kernel_size` window of `input [N, C, H, W]` at `stride` (the
    kernel's size by default), after `padding` zeros on each side, which count in the
    mean (PyTorch's `count_include_pad=True`): `torch.nn.functional.avg_pool2d`. Recorded
    as two `unfold`s and a mean over the window lanes, whose adjoint is `fold`."""
    if input.shape.rank != 4:
        raise ShapeError(f"avg_pool2d: input {input.shape} must be [N, C, H, W]")
    kernel = _pair("avg_pool2d: kernel_size", kernel_size, (1, 1))
    strides = _pair("avg_pool2d: stride", stride, kernel)
    pads = _pair("avg_pool2d: padding", padding, (0, 0))
    if min(kernel) < 1 or min(strides) < 1 or min(pads) < 0:
        raise ValueError(
            f"avg_pool2d: kernel_size {kernel} and stride {strides} must be positive, "
            f"padding {pads} at least 0"
        )
    if any(2 * pad > size for pad, size in zip(pads, kernel)):
        raise ValueError(f"avg_pool2d: padding {pads} must be at most half of {kernel}")
    height, width = input.shape[2] + 2 * pads[0], input.shape[3] + 2 * pads[1]
    if kernel[0] > height or kernel[1] > width:
        raise ShapeError(f"avg_pool2d: a {kernel} window is larger than input {input.shape}")
    if any(pads):
        input = input.pad(((0, 0), (0, 0), (pads[0], pads[0]), (pads[1], pads[1])))
    if strides == kernel and height % kernel[0] == 0 and width % kernel[1] == 0:
        # Tiling windows are axes of their own: a reshape, no copy.
        batch, channels = input.shape[0], input.shape[1]
        tiles = input.reshape(
            batch, channels, height // kernel[0], kernel[0], width // kernel[1], kernel[1]
        )
        return tiles.mean(axis=(3, 5))
    windows = input.unfold(2, kernel[0], strides[0]).unfold(3, kernel[1], strides[1])
    return windows.mean(axis=(4, 5))


def adaptive_avg_pool2d(input: Value, output_size: int | tuple[int, int]) -> Value:
    """`input [N, C, H, W]` averaged into `output_size` cells `[N, C, OH, OW]`, cell `i`
    of an axis of extent `H` spanning `floor(i * H / OH)` to `ceil((i + 1) * H / OH)`
    as in `torch.nn.functional.adaptive_avg_pool2d`; `output_size` 1 is global average
    pooling."""
    if input.shape.rank != 4:
        raise ShapeError(f"adaptive_avg_pool2d: input {input.shape} must be [N, C, H, W]")
    cells = _pair("adaptive_avg_pool2d: output_size", output_size, (1, 1))
    extents = (input.shape[2], input.shape[3])
    if min(cells) < 1 or any(cell > extent for cell, extent in zip(cells, extents)):
        raise ShapeError(
            f"adaptive_avg_pool2d: output size {cells} must be positive and at most the "
            f"input's {extents}"
        )
    if cells == (1, 1):
        return input.mean(axis=(2, 3), keepdims=True)
    if extents[0] % cells[0] == 0 and extents[1] % cells[1] == 0:
        return avg_pool2d(input, (extents[0] // cells[0], extents[1] // cells[1]))
    for axis, cell_count, extent in ((2, cells[0], extents[0]), (3, cells[1], extents[1])):
        pieces = []
        for cell in range(cell_count):
            start = cell * extent // cell_count
            end = -(-(cell + 1) * extent // cell_count)
            pieces.append(input.narrow(axis, start, end - start).mean(axis=axis, keepdims=True))
        input = concat(pieces, axis=axis)
    return input


class AvgPool2d(Module):
    """`torch.nn.AvgPool2d`: `avg_pool2d` with its window fixed; no parameters."""

    def __init__(
        self,
        kernel_size: int | tuple[int, int],
        stride: int | tuple[int, int] | None = None,
        padding: int | tuple[int, int] = 0,
    ) -> None:
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def express(self, value: Value) -> Value:
        """Records the pooling of `value`."""
        return avg_pool2d(value, self.kernel_size, self.stride, self.padding)

    def parameters(self) -> list[Symbol]:
        """None."""
        return []


class AdaptiveAvgPool2d(Module):
    """`torch.nn.AdaptiveAvgPool2d`: `adaptive_avg_pool2d` to `output_size`; no parameters."""

    def __init__(self, output_size: int | tuple[int, int]) -> None:
        self.output_size = output_size

    def express(self, value: Value) -> Value:
        """Records the pooling of `value`."""
        return adaptive_avg_pool2d(value, self.output_size)

    def parameters(self) -> list[Symbol]:
        """None."""
        return []

"""TorchNamespace: the emission rules' operations in PyTorch (see `namespace`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as functional

from topos.peers.namespace import PeerNamespace


class TorchNamespace(PeerNamespace):
    """PyTorch's spelling of what the peers spell differently."""

    name = "torch"

    def __init__(self, dtype: np.dtype) -> None:
        super().__init__(torch, dtype)
        self.torch_dtype = torch.float64 if np.dtype(dtype) == np.float64 else torch.float32
        self._maps: dict[int, tuple[np.ndarray, Any]] = {}

    def constant(self, array: Any) -> Any:
        array = np.asarray(array)
        if array.dtype.kind == "f":
            return torch.from_numpy(np.array(array, dtype=self.dtype))
        return torch.from_numpy(np.array(array, dtype=np.int64))

    def indices(self, array: Any) -> Any:
        if isinstance(array, torch.Tensor):
            return array.long()
        if not array.flags.writeable:
            # A cached index map: converted once, kept as long as the map lives.
            held = self._maps.get(id(array))
            if held is None or held[0] is not array:
                held = (array, torch.from_numpy(np.array(array, dtype=np.int64)))
                self._maps[id(array)] = held
            return held[1]
        return torch.from_numpy(np.array(array, dtype=np.int64))

    def sum(self, x, axis=None, keepdims=False):
        if axis is None:
            return torch.sum(x)
        return torch.sum(x, dim=axis, keepdim=keepdims)

    def permute(self, x, axes):
        return torch.permute(x, tuple(axes))

    def pad(self, x, widths: Sequence[tuple[int, int]]):
        flat = [width for pair in reversed(tuple(widths)) for width in pair]
        return torch.nn.functional.pad(x, flat)

    def take(self, x, indices, axis):
        indices = self.indices(indices)
        picked = torch.index_select(x, axis, indices.reshape(-1))
        shape = (*x.shape[:axis], *indices.shape, *x.shape[axis + 1 :])
        return picked.reshape(shape)

    def take_along(self, x, indices, axis):
        indices = self.indices(indices)
        if indices.dim() == x.dim() and all(
            extent == indices.shape[position]
            for position, extent in enumerate(x.shape)
            if position != axis % x.dim()
        ):
            # `gather` when no axis broadcasts: `take_along_dim` wraps every index (a
            # remainder as long as the indices) before gathering.
            return torch.gather(x, axis, indices)
        return torch.take_along_dim(x, indices, dim=axis)

    def scatter_add(self, size, indices, values):
        zeros = torch.zeros((size, *values.shape[1:]), dtype=values.dtype)
        return zeros.index_add(0, self.indices(indices), values)

    def logsumexp(self, x, axis):
        return torch.logsumexp(x, dim=axis)

    def max(self, x, axis, keepdims=False):
        return torch.amax(x, dim=axis, keepdim=keepdims)

    def argmax(self, x, axis):
        # `torch.max` along an axis gives the first index of the maximum, as `argmax`
        # does, but reduces a leading axis an order of magnitude faster (49 ms against
        # 3 ms for [4, 8192, 16] over axis 0 on one core).
        return torch.max(x.detach(), dim=axis).indices

    def concat(self, arrays, axis):
        return torch.cat(list(arrays), dim=axis)

    def stack(self, arrays, axis=0):
        return torch.stack(list(arrays), dim=axis)

    def as_float(self, x):
        return x.detach().to(self.torch_dtype)

    def stop_gradient(self, x):
        return x.detach()

    def sigmoid(self, x):
        return torch.sigmoid(x)

    def erf(self, x):
        return torch.erf(x)

    def zeros(self, shape):
        return torch.zeros(tuple(shape), dtype=self.torch_dtype)

    def reshape(self, x, shape):
        return torch.reshape(x, tuple(shape))

    def convolution(self, images, weights, window):
        return functional.conv2d(images, weights, stride=window.stride, padding=window.padding)

    def transposed_convolution(self, gradient, weights, window, shape):
        # The windows that fit may leave rows and columns of the padded images unread;
        # output_padding puts them back (they receive zeros).
        kernel = (window.kernel_height, window.kernel_width)
        remainders = tuple(
            (extent + 2 * window.padding - size) % window.stride
            for extent, size in zip(tuple(shape)[2:], kernel)
        )
        return functional.conv_transpose2d(
            gradient,
            weights,
            stride=window.stride,
            padding=window.padding,
            output_padding=remainders,
        )

    def patches(self, images, window):
        kernel = (window.kernel_height, window.kernel_width)
        columns = functional.unfold(images, kernel, padding=window.padding, stride=window.stride)
        out_height, out_width = window.output_extents(*images.shape[2:])
        return columns.reshape(columns.shape[0], columns.shape[1], out_height, out_width)

    def patches_adjoint(self, columns, window, shape):
        kernel = (window.kernel_height, window.kernel_width)
        flat = columns.reshape(columns.shape[0], columns.shape[1], -1)
        return functional.fold(
            flat, tuple(shape)[2:], kernel, padding=window.padding, stride=window.stride
        )

    def max_pool(self, x, size, stride):
        return functional.max_pool2d(x, size, stride)

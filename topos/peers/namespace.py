"""PeerNamespace: what an emission rule writes against, one per peer framework.

A rule (see `topos.ops.emission`) calls `xp.<name>`: names PyTorch and JAX spell alike
(`exp`, `log`, `sqrt`, `tanh`, `abs`, `maximum`, `where`, `matmul`, `reshape`,
`broadcast_to`) go to the peer's own array module (`torch`, `jax.numpy`); the methods
below are the ones the two spell differently, each peer's subclass writing its own.
Arrays are the peer's; index maps and constants come in as NumPy arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class PeerNamespace:
    """The operations an emission rule may call; `module` is the peer's array module."""

    #: The peer's name (`torch`, `jax`).
    name = ""

    def __init__(self, module: Any, dtype: np.dtype) -> None:
        self.module = module
        #: The float dtype of the program being emitted (float32 or float64).
        self.dtype = np.dtype(dtype)

    def __getattr__(self, name: str) -> Any:
        # Only for names not defined here: the peer's own function of that name.
        return getattr(self.module, name)

    # Arrays in ---------------------------------------------------------------------

    def constant(self, array: Any) -> Any:
        """A NumPy array (floats in the program's dtype, or integers) as a peer array."""
        raise NotImplementedError

    def indices(self, array: Any) -> Any:
        """An integer NumPy array (or peer array of integers) as the peer's int64 indices."""
        raise NotImplementedError

    # What the peers spell differently ------------------------------------------------

    def sum(self, x: Any, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Any:
        raise NotImplementedError

    def permute(self, x: Any, axes: Sequence[int]) -> Any:
        raise NotImplementedError

    def pad(self, x: Any, widths: Sequence[tuple[int, int]]) -> Any:
        raise NotImplementedError

    def take(self, x: Any, indices: Any, axis: int) -> Any:
        """The entries of `x` at `indices` (integers, any shape) along `axis`."""
        raise NotImplementedError

    def take_along(self, x: Any, indices: Any, axis: int) -> Any:
        raise NotImplementedError

    def scatter_add(self, size: int, indices: Any, values: Any) -> Any:
        """A `[size, *values.shape[1:]]` array of zeros onto whose row `indices[i]` row i
        of `values` is added (`indices` flat, one per row of `values`)."""
        raise NotImplementedError

    def logsumexp(self, x: Any, axis: int) -> Any:
        raise NotImplementedError

    def max(self, x: Any, axis: int, keepdims: bool = False) -> Any:
        raise NotImplementedError

    def argmax(self, x: Any, axis: int) -> Any:
        """The first index holding the maximum along `axis` (no gradient)."""
        raise NotImplementedError

    def concat(self, arrays: Sequence[Any], axis: int) -> Any:
        raise NotImplementedError

    def stack(self, arrays: Sequence[Any], axis: int = 0) -> Any:
        raise NotImplementedError

    def as_float(self, x: Any) -> Any:
        """`x` (booleans, integers) as the program's floats, with no gradient."""
        raise NotImplementedError

    def stop_gradient(self, x: Any) -> Any:
        raise NotImplementedError

    def sigmoid(self, x: Any) -> Any:
        raise NotImplementedError

    def erf(self, x: Any) -> Any:
        """The error function of each element."""
        raise NotImplementedError

    def zeros(self, shape: Sequence[int]) -> Any:
        """Zeros of `shape` in the program's dtype."""
        raise NotImplementedError

    # The peer's native image operations ----------------------------------------------
    # `window` is a `topos.ops.patch_window.PatchWindow` (its phases are the rule's to
    # arrange: these see images and the window's kernel, stride and padding alone).

    def convolution(self, images: Any, weights: Any, window: Any) -> Any:
        """`images [N, C, H, W]` convolved (cross-correlated, as deep learning says) with
        `weights [F, C, KH, KW]` through `window`: `[N, F, OH, OW]`."""
        raise NotImplementedError

    def transposed_convolution(
        self, gradient: Any, weights: Any, window: Any, shape: Sequence[int]
    ) -> Any:
        """The adjoint of `convolution` in the images: `gradient [N, F, OH, OW]` taken back
        to images of `shape [N, C, H, W]` through `weights [F, C, KH, KW]`."""
        raise NotImplementedError

    def patches(self, images: Any, window: Any) -> Any:
        """The zero-padded windows of `images [N, C, H, W]`: `[N, C*KH*KW, OH, OW]`, the
        feature `c*KH*KW + ky*KW + kx` holding channel `c` at tap `(ky, kx)`."""
        raise NotImplementedError

    def patches_adjoint(self, columns: Any, window: Any, shape: Sequence[int]) -> Any:
        """The adjoint of `patches`: each entry of `columns [N, C*KH*KW, OH, OW]` added
        onto the pixel of images of `shape` it was taken from."""
        raise NotImplementedError

    def max_pool(self, x: Any, size: int, stride: int) -> Any:
        """The largest entry of each `size x size` window of `x [N, C, H, W]` at `stride`
        (no padding; the windows that fit), its gradient to each window's first largest
        entry in row-major order."""
        raise NotImplementedError

    # Written once from the above ----------------------------------------------------

    def narrow(self, x: Any, axis: int, start: int, length: int) -> Any:
        """The slice `start:start+length` along `axis`."""
        index = (slice(None),) * axis + (slice(start, start + length),)
        return x[index]

    def swap_last(self, x: Any) -> Any:
        """`x` with its last two axes swapped."""
        axes = list(range(len(x.shape)))
        axes[-2], axes[-1] = axes[-1], axes[-2]
        return self.permute(x, axes)

    def take_flat(self, x: Any, where: np.ndarray) -> Any:
        """The gather `where` describes (see `topos.ops.emission.gather_map`): element
        `where[i] - 1` of `x` flattened, or 0 where `where[i]` is 0."""
        flat = self.concat([self.zeros((1,)), self.reshape(x, (-1,))], 0)
        return self.take(flat, self.indices(where), 0)

    def scatter_flat(self, values: Any, where: np.ndarray, shape: Sequence[int]) -> Any:
        """The adjoint of `take_flat(x, where)` for `x` of `shape`: each entry of `values`
        added onto the element of `x` it was gathered from (none for a 0)."""
        count = int(np.prod(tuple(shape), dtype=np.int64))
        flat = self.scatter_add(
            count + 1, self.indices(where.reshape(-1)), self.reshape(values, (-1,))
        )
        return self.reshape(flat[1:], tuple(shape))

    def move_axis(self, x: Any, source: int, destination: int) -> Any:
        """`x` with axis `source` moved to position `destination`, the others in order."""
        axes = [axis for axis in range(len(x.shape)) if axis != source]
        axes.insert(destination, source)
        return self.permute(x, axes)

    def add_along(self, length: int, axis: int, indices: np.ndarray, values: Any) -> Any:
        """Zeros with extent `length` along `axis`, onto whose position `indices[i]` along
        `axis` slice `i` of `values` along `axis` is added (repeated indices add up):
        the adjoint of `take(x, indices, axis)` for flat `indices`."""
        front = self.move_axis(values, axis, 0)
        summed = self.scatter_add(length, self.indices(indices), front)
        return self.move_axis(summed, 0, axis)

    def sum_to(self, x: Any, shape: Sequence[int]) -> Any:
        """`x` summed down to `shape`, the shape it was broadcast from."""
        shape = tuple(shape)
        lead = len(x.shape) - len(shape)
        if lead:
            x = self.sum(x, axis=tuple(range(lead)))
        stretched = tuple(
            axis for axis, extent in enumerate(shape) if extent == 1 and x.shape[axis] != 1
        )
        if stretched:
            x = self.sum(x, axis=stretched, keepdims=True)
        return self.reshape(x, shape)

    def lanes_first(self, x: Any, axes: Sequence[int]) -> Any:
        """`x` with its lane axes moved to the front and flattened into one: `[L, *lane]`."""
        axes = tuple(axes)
        rest = tuple(axis for axis in range(len(x.shape)) if axis not in axes)
        moved = self.permute(x, axes + rest)
        return self.reshape(moved, (-1, *(x.shape[axis] for axis in rest)))

    def lanes_back(self, lanes: Any, axes: Sequence[int], extents: Sequence[int]) -> Any:
        """The inverse of `lanes_first`: `[L, *lane]` with its lanes as axes `axes` of
        `extents` again."""
        axes = tuple(axes)
        lane = tuple(lanes.shape[1:])
        rank = len(lane) + len(axes)
        rest = tuple(axis for axis in range(rank) if axis not in axes)
        grown = self.reshape(lanes, (*extents, *lane))
        order = axes + rest
        inverse = [order.index(axis) for axis in range(rank)]
        return self.permute(grown, inverse)

    def one_hot_lanes(self, winners: Any, count: int) -> Any:
        """`[count, *winners.shape]` floats: 1 where the lane number equals `winners`."""
        numbers = self.constant(
            np.arange(count, dtype=self.dtype).reshape((count,) + (1,) * len(winners.shape))
        )
        return self.as_float(numbers == self.stop_gradient(winners)[None])

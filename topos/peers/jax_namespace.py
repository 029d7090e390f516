"""JaxNamespace: the emission rules' operations in JAX (see `namespace`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.special
import numpy as np

from topos.peers.namespace import PeerNamespace


class JaxNamespace(PeerNamespace):
    """JAX's spelling of what the peers spell differently."""

    name = "jax"

    def __init__(self, dtype: np.dtype) -> None:
        super().__init__(jnp, dtype)

    def constant(self, array: Any) -> Any:
        array = np.asarray(array)
        if array.dtype.kind == "f":
            return jnp.asarray(array, dtype=self.dtype)
        return jnp.asarray(array)

    def indices(self, array: Any) -> Any:
        if isinstance(array, np.ndarray):
            return jnp.asarray(array)
        return array.astype(jnp.int32) if array.dtype.kind == "f" else array

    def sum(self, x, axis=None, keepdims=False):
        return jnp.sum(x, axis=axis, keepdims=keepdims)

    def permute(self, x, axes):
        return jnp.transpose(x, tuple(axes))

    def pad(self, x, widths: Sequence[tuple[int, int]]):
        return jnp.pad(x, tuple(tuple(pair) for pair in widths))

    def take(self, x, indices, axis):
        return jnp.take(x, self.indices(indices), axis=axis)

    def take_along(self, x, indices, axis):
        return jnp.take_along_axis(x, self.indices(indices), axis=axis)

    def scatter_add(self, size, indices, values):
        zeros = jnp.zeros((size, *values.shape[1:]), dtype=values.dtype)
        return zeros.at[self.indices(indices)].add(values)

    def logsumexp(self, x, axis):
        return jax.nn.logsumexp(x, axis=axis)

    def max(self, x, axis, keepdims=False):
        return jnp.max(x, axis=axis, keepdims=keepdims)

    def argmax(self, x, axis):
        return jnp.argmax(jax.lax.stop_gradient(x), axis=axis)

    def concat(self, arrays, axis):
        return jnp.concatenate(list(arrays), axis=axis)

    def stack(self, arrays, axis=0):
        return jnp.stack(list(arrays), axis=axis)

    def as_float(self, x):
        return jax.lax.stop_gradient(x).astype(self.dtype)

    def stop_gradient(self, x):
        return jax.lax.stop_gradient(x)

    def sigmoid(self, x):
        return jax.nn.sigmoid(x)

    def erf(self, x):
        return jax.scipy.special.erf(x)

    def zeros(self, shape):
        return jnp.zeros(tuple(shape), dtype=self.dtype)

    def reshape(self, x, shape):
        return jnp.reshape(x, tuple(shape))

    def convolution(self, images, weights, window):
        padding = [(window.padding, window.padding)] * 2
        return jax.lax.conv_general_dilated(
            images,
            weights,
            (window.stride, window.stride),
            padding,
            dimension_numbers=_IMAGES_WEIGHTS_IMAGES,
            precision=jax.lax.Precision.HIGHEST,
        )

    def transposed_convolution(self, gradient, weights, window, shape):
        # The convolution is linear in the images: its transpose is what JAX derives.
        def forward(images):
            return self.convolution(images, weights, window)

        (images,) = jax.linear_transpose(forward, self._like(shape, gradient))(gradient)
        return images

    def patches(self, images, window):
        return jax.lax.conv_general_dilated_patches(
            images,
            (window.kernel_height, window.kernel_width),
            (window.stride, window.stride),
            [(window.padding, window.padding)] * 2,
            dimension_numbers=_IMAGES_WEIGHTS_IMAGES,
            precision=jax.lax.Precision.HIGHEST,
        )

    def patches_adjoint(self, columns, window, shape):
        def forward(images):
            return self.patches(images, window)

        (images,) = jax.linear_transpose(forward, self._like(shape, columns))(columns)
        return images

    def max_pool(self, x, size, stride):
        return jax.lax.reduce_window(
            x, -jnp.inf, jax.lax.max, (1, 1, size, size), (1, 1, stride, stride), "VALID"
        )

    def _like(self, shape, array):
        return jax.ShapeDtypeStruct(tuple(shape), array.dtype)


#: `conv_general_dilated`'s layouts: images and outputs `[N, C, H, W]`, weights
#: `[F, C, KH, KW]`, as topos records them.
_IMAGES_WEIGHTS_IMAGES = ("NCHW", "OIHW", "NCHW")

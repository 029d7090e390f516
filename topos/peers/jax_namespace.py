"""JaxNamespace: the emission rules' operations in JAX (see `namespace`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
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

    def zeros(self, shape):
        return jnp.zeros(tuple(shape), dtype=self.dtype)

    def reshape(self, x, shape):
        return jnp.reshape(x, tuple(shape))

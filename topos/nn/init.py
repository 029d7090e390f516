"""Parameter initializers: closures `shape -> Tensor` over their own splitmix64 stream.

The streams are the Rust crate's, element for element, and must never change:
a unit draw is `(next >> 11) / 2**53`; a normal draw is the cosine half of
Box-Muller, `sqrt(-2 ln(1 - u1)) * cos(2 pi u2)` over two consecutive units,
computed in float64, scaled, and rounded to float32 once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np

from topos.splitmix64 import SplitMix64
from topos.tensor import Shape, Tensor

Initializer = Callable[[Iterable[int]], Tensor]

# NumPy's vectorised log may differ from the platform libm (which the Rust
# crate calls) in the last bits of a float64: with AVX-512 it does so for about
# one draw in 300. Such a difference reaches the float32 result only when the
# float64 value lies within a few ulps of a float32 rounding boundary, so the
# draws within this relative margin of one are recomputed with `math`. The
# margin (2**-40, some 8000 float64 ulps) is far wider than any libm's error,
# and only about one draw in 60000 falls inside it.
_ROUNDING_MARGIN = 2.0**-40


def _extents(shape: Iterable[int]) -> tuple[int, ...]:
    """The extents of a Shape, tuple or list as a tuple of ints; refuses a negative one."""
    return Shape.of(shape).extents


def _scalar_normal(first: float, second: float, deviation: float) -> float:
    """One normal draw through the platform libm, exactly as the Rust crate computes it."""
    return math.sqrt(-2.0 * math.log(1.0 - first)) * math.cos(2.0 * math.pi * second) * deviation


def _float32_as_libm(values: np.ndarray, recompute: Callable[[int], float]) -> np.ndarray:
    """Rounds float64 `values` to float32, recomputing through `recompute(index)` the
    values whose rounding a last-bits libm difference could change."""
    rounded = values.astype(np.float32)
    doubtful = ((values * (1.0 + _ROUNDING_MARGIN)).astype(np.float32) != rounded) | (
        (values * (1.0 - _ROUNDING_MARGIN)).astype(np.float32) != rounded
    )
    for index in np.flatnonzero(doubtful).tolist():
        rounded[index] = recompute(index)
    return rounded


def _normal_draws(generator: SplitMix64, count: int, deviation: float) -> np.ndarray:
    """`count` float32 normal draws times `deviation`, two units each, first then second."""
    units = generator.units(2 * count)
    first, second = units[0::2], units[1::2]
    values = np.sqrt(-2.0 * np.log(1.0 - first)) * np.cos(2.0 * np.pi * second) * deviation
    return _float32_as_libm(
        values,
        lambda index: _scalar_normal(float(first[index]), float(second[index]), deviation),
    )


def _uniform_draws(generator: SplitMix64, count: int, scale: float) -> np.ndarray:
    """`count` float32 draws `(2u - 1) * scale`; plain IEEE arithmetic, exact as vectorised."""
    return ((2.0 * generator.units(count) - 1.0) * scale).astype(np.float32)


def normal(seed: int, deviation: float) -> Initializer:
    """Returns a closure drawing tensors of any shape from a normal of `deviation`.

    The closure owns its stream: calling it again continues where the last call ended.
    """
    generator = SplitMix64(seed)
    deviation = float(deviation)

    def initialize(shape: Iterable[int]) -> Tensor:
        extents = _extents(shape)
        draws = _normal_draws(generator, math.prod(extents), deviation)
        return Tensor.adopt(draws.reshape(extents))

    return initialize


def uniform(seed: int, scale: float) -> Initializer:
    """Returns a closure drawing tensors of any shape uniformly within `± scale`.

    The closure owns its stream: calling it again continues where the last call ended.
    """
    generator = SplitMix64(seed)
    scale = float(scale)

    def initialize(shape: Iterable[int]) -> Tensor:
        extents = _extents(shape)
        draws = _uniform_draws(generator, math.prod(extents), scale)
        return Tensor.adopt(draws.reshape(extents))

    return initialize


def _fans(name: str, extents: tuple[int, ...]) -> tuple[int, int]:
    """The fan-in and fan-out of a weight: `[inputs, outputs]` for rank 2 (the streams
    DESIGN.md fixes); for rank 3 and more a convolution's `[outputs, inputs, *window]`,
    each fan times the window's volume, as PyTorch's `_calculate_fan_in_and_fan_out`."""
    if len(extents) == 2:
        return extents[0], extents[1]
    if len(extents) < 2:
        raise ValueError(
            f"init.{name}: shape {list(extents)} has rank {len(extents)}; it takes "
            "[inputs, outputs] weights, [outputs, inputs, *window] kernels or a rank-1 bias"
        )
    window = math.prod(extents[2:])
    return extents[1] * window, extents[0] * window


def _fan_initializer(
    name: str, seed: int, draw: Callable[[SplitMix64, int, int, int], np.ndarray]
) -> Initializer:
    """A closure giving `draw(generator, count, fan_in, fan_out)` for weights of rank 2
    and more (see `_fans`), and zeros, drawing nothing, for rank-1 shapes (biases)."""
    generator = SplitMix64(seed)

    def initialize(shape: Iterable[int]) -> Tensor:
        extents = _extents(shape)
        if len(extents) == 1:
            return Tensor.adopt(np.zeros(extents, dtype=np.float32))
        inputs, outputs = _fans(name, extents)
        count = math.prod(extents)
        if count == 0:
            # Nothing to draw, and a zero fan would divide by zero.
            return Tensor.adopt(np.zeros(extents, dtype=np.float32))
        return Tensor.adopt(draw(generator, count, inputs, outputs).reshape(extents))

    return initialize


def kaiming(seed: int) -> Initializer:
    """Returns a closure giving `[inputs, outputs]` normal draws of deviation
    `sqrt(2 / inputs)` (a `[outputs, inputs, *window]` kernel: `sqrt(2 / fan_in)`, fan_in
    being inputs times the window's volume), and zeros, drawing nothing, for a rank-1
    shape."""
    return _fan_initializer(
        "kaiming",
        seed,
        lambda generator, count, inputs, outputs: _normal_draws(
            generator, count, math.sqrt(2.0 / inputs)
        ),
    )


def xavier(seed: int) -> Initializer:
    """Returns a closure giving `[inputs, outputs]` uniform draws within
    `± sqrt(6 / (inputs + outputs))` (a `[outputs, inputs, *window]` kernel: within
    `± sqrt(6 / (fan_in + fan_out))`, each fan times the window's volume), and zeros,
    drawing nothing, for a rank-1 shape."""
    return _fan_initializer(
        "xavier",
        seed,
        lambda generator, count, inputs, outputs: _uniform_draws(
            generator, count, math.sqrt(6.0 / (inputs + outputs))
        ),
    )

"""Synthetic datasets: deterministic, learnable stand-ins for CIFAR-10 and MNIST.

Each class has a smooth prototype: a coarse grid of random levels per channel,
enlarged by bilinear interpolation. An image blends its class's prototype with
a weight of 8/16 to 16/16 and another class's with the rest, shifts each
channel's brightness, adds uniform noise per pixel and clips to 0..255. The
half-and-half blends are ambiguous on purpose, so neither the loss nor the
error rate can reach zero, as with real data.

Every random number comes from splitmix64 and every computation is integer
arithmetic, so the bytes are the same on every machine and with every NumPy
version; the fingerprints are pinned in the tests.
"""

from __future__ import annotations

import numpy as np

from topos.datasets.dataset import Dataset
from topos.datasets.shuffle import shuffle
from topos.datasets.split import Split
from topos.datasets.synthetic_cache import cached_split
from topos.splitmix64 import SplitMix64

# Control points per side of a prototype's coarse grid: few, so it is smooth.
GRID_SIDE = 4

# Prototype levels span FLOOR .. FLOOR + 127, leaving room for the brightness
# shift and the noise before clipping.
FLOOR = 64

# Another class's prototype gets a weight of 0 .. BLEND_LIMIT sixteenths.
BLEND_LIMIT = 8

# Per image and channel, a brightness shift in -BRIGHTNESS .. BRIGHTNESS - 1.
BRIGHTNESS = 32

# Per pixel, noise in -64 .. 63: a random byte halved, less 64.
NOISE_OFFSET = 64

# Images generated at once: bounds the int16 temporaries to some 25 MB.
CHUNK = 4096


def _bytes_of(generator: SplitMix64, count: int) -> np.ndarray:
    """`count` random bytes: each draw's eight bytes, little-endian on every machine."""
    draws = generator.draws(-(-count // 8)).astype("<u8", copy=False)
    return draws.view(np.uint8)[:count]


def _enlarge(grid: np.ndarray, side: int) -> np.ndarray:
    """Bilinear interpolation of `[..., GRID_SIDE, GRID_SIDE]` levels onto
    `[..., side, side]` in exact integer arithmetic, rounded half up."""
    # Output coordinate y sits at y * (GRID_SIDE - 1) / (side - 1) on the grid:
    # between points `lower` and `upper`, `weights / span` of the way along.
    span = side - 1
    numerators = np.arange(side, dtype=np.int64) * (GRID_SIDE - 1)
    lower = numerators // span
    upper = np.minimum(lower + 1, GRID_SIDE - 1)
    weights = numerators % span
    levels = grid.astype(np.int64)
    rows = (
        levels[..., lower, :] * (span - weights)[:, None] + levels[..., upper, :] * weights[:, None]
    )
    enlarged = rows[..., lower] * (span - weights) + rows[..., upper] * weights
    return (enlarged + span * span // 2) // (span * span)


def prototypes(seed: int, classes: int, image_shape: tuple[int, int, int]) -> np.ndarray:
    """The int16 prototype of each class, `[classes, channels * side * side]`."""
    channels, height, width = image_shape
    if height != width or height < 2:
        raise ValueError(f"synthetic: images must be square and at least 2x2, not {height}x{width}")
    grid = _bytes_of(SplitMix64(seed), classes * channels * GRID_SIDE * GRID_SIDE)
    grid = grid.reshape(classes, channels, GRID_SIDE, GRID_SIDE) >> 1
    return (_enlarge(grid, height) + FLOOR).reshape(classes, -1).astype(np.int16)


def synthetic_split(
    seed: int,
    count: int,
    class_prototypes: np.ndarray,
    image_shape: tuple[int, int, int],
    mean: tuple[float, ...],
    deviation: tuple[float, ...],
) -> Split:
    """`count` images drawn from the stream `seed`, every class equally often, in
    shuffled order."""
    classes, volume = class_prototypes.shape
    channels = image_shape[0]
    generator = SplitMix64(seed)
    labels = np.arange(count, dtype=np.int64) % classes
    generator.state = shuffle(labels, generator.state)
    # Per image: which other class blends in, how strongly, and each channel's shift.
    draws = generator.draws(count * (2 + channels)).reshape(count, 2 + channels)
    others = (labels + 1 + (draws[:, 0] % np.uint64(classes - 1)).astype(np.int64)) % classes
    blends = (draws[:, 1] % np.uint64(BLEND_LIMIT + 1)).astype(np.int16)[:, None]
    shifts = (draws[:, 2:] % np.uint64(2 * BRIGHTNESS)).astype(np.int16)
    shifts += -BRIGHTNESS - NOISE_OFFSET
    pixels = np.empty((count, volume), dtype=np.uint8)
    for start in range(0, count, CHUNK):
        chunk = slice(start, min(start + CHUNK, count))
        images = chunk.stop - chunk.start
        values = class_prototypes[labels[chunk]] * (16 - blends[chunk])
        values += class_prototypes[others[chunk]] * blends[chunk]
        values >>= 4
        values += _bytes_of(generator, images * volume).reshape(images, volume) >> 1
        values.reshape(images, channels, -1)[...] += shifts[chunk, :, None]
        np.clip(values, 0, 255, out=values)
        pixels[chunk] = values
    return Split(pixels.reshape(count, *image_shape), labels, classes, mean, deviation)


def synthetic_dataset(
    name: str,
    seed: int,
    image_shape: tuple[int, int, int],
    sizes: tuple[int, int],
    classes: int,
    mean: tuple[float, ...],
    deviation: tuple[float, ...],
) -> Dataset:
    """A synthetic Dataset of `sizes` (train, test) images. The splits share the
    class prototypes, and each is generated on first use from its own stream."""
    prototype_seed, train_seed, test_seed = (int(draw) for draw in SplitMix64(seed).draws(3))
    class_prototypes = prototypes(prototype_seed, classes, image_shape)
    train_count, test_count = sizes

    def generate(split_seed: int, count: int) -> Split:
        def fresh() -> tuple[np.ndarray, np.ndarray]:
            split = synthetic_split(
                split_seed, count, class_prototypes, image_shape, mean, deviation
            )
            return split.pixels, split.labels

        key = f"{name}-{split_seed:016x}-{count}"
        pixels, labels, sha256 = cached_split(key, (count, *image_shape), fresh)
        return Split(pixels, labels, classes, mean, deviation, fingerprint=sha256)

    return Dataset(
        name,
        "synthetic",
        "synthetic",
        lambda: generate(train_seed, train_count),
        lambda: generate(test_seed, test_count),
    )

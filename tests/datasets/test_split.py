"""Split: standardisation by lookup table, one-hot rows, fingerprint."""

import hashlib

import numpy as np
import pytest

from tests.datasets.writers import random_images
from topos.datasets import Split

MEAN = (0.4914, 0.4822, 0.4465)
DEVIATION = (0.2470, 0.2435, 0.2616)


@pytest.fixture
def split():
    pixels, labels = random_images(0, 40, (3, 8, 8))
    return Split(pixels, labels, 10, MEAN, DEVIATION)


def test_images_are_standardised_per_channel_as_float64_rounded_once(split):
    indices = np.array([5, 0, 39, 5])
    images = split.images(indices)
    assert images.dtype == np.float32
    assert images.shape == (4, 3, 8, 8)
    pixels = split.pixels[indices].astype(np.float64)
    mean = np.array(MEAN)[None, :, None, None]
    deviation = np.array(DEVIATION)[None, :, None, None]
    expected = ((pixels / 255.0 - mean) / deviation).astype(np.float32)
    assert np.array_equal(images.view(np.uint32), expected.view(np.uint32))


def test_images_fill_a_given_buffer(split):
    out = np.empty((2, 3, 8, 8), dtype=np.float32)
    assert split.images([1, 2], out=out) is out
    assert np.array_equal(out, split.images([1, 2]))


def test_one_hot_rows_hold_one_at_the_label(split):
    rows = split.one_hot([3, 7])
    assert rows.dtype == np.float32
    assert rows.shape == (2, 10)
    assert rows.sum() == 2
    assert rows[0, split.labels[3]] == 1 and rows[1, split.labels[7]] == 1


def test_fingerprint_is_sha256_of_labels_then_pixels(split):
    expected = hashlib.sha256(split.labels.tobytes() + split.pixels.tobytes()).hexdigest()
    assert split.fingerprint == expected


def test_fingerprint_does_not_depend_on_the_label_dtype():
    pixels, labels = random_images(1, 5, (1, 4, 4))
    narrow = Split(pixels.copy(), labels, 10, (0.5,), (0.5,))
    wide = Split(pixels.copy(), labels.astype(np.int64), 10, (0.5,), (0.5,))
    assert narrow.labels.dtype == wide.labels.dtype == np.uint8
    assert narrow.fingerprint == wide.fingerprint


def test_arrays_are_read_only(split):
    with pytest.raises(ValueError):
        split.pixels[0, 0, 0, 0] = 1
    with pytest.raises(ValueError):
        split.labels[0] = 1


def test_length_shape_and_class_counts(split):
    assert len(split) == 40
    assert split.image_shape == (3, 8, 8)
    assert sum(split.class_counts()) == 40
    assert split.class_counts() == np.bincount(split.labels, minlength=10).tolist()


def test_inconsistent_arguments_are_refused():
    pixels, labels = random_images(2, 4, (3, 2, 2))
    with pytest.raises(ValueError, match="labels for 4 images"):
        Split(pixels, labels[:3], 10, MEAN, DEVIATION)
    with pytest.raises(ValueError, match=r"outside 0..4"):
        Split(pixels, np.array([0, 1, 2, 5]), 5, MEAN, DEVIATION)
    with pytest.raises(ValueError, match="for 3 channels"):
        Split(pixels, labels, 10, (0.5,), (0.5,))
    with pytest.raises(ValueError, match="uint8"):
        Split(pixels.astype(np.float32), labels, 10, MEAN, DEVIATION)


def test_images_take_negative_indices_and_refuse_out_of_range_ones():
    split = Split(
        np.arange(4 * 2 * 2 * 2, dtype=np.uint8).reshape(4, 2, 2, 2),
        np.array([0, 1, 0, 1], np.uint8),
        2,
        (0.5, 0.5),
        (0.25, 0.25),
    )
    assert np.array_equal(split.images([-1, 0]), split.images([3, 0]))
    with pytest.raises(IndexError):
        split.images([4])


def test_images_into_any_layout_give_the_same_values():
    split = Split(
        np.random.default_rng(0).integers(0, 256, (5, 3, 4, 4), dtype=np.uint8),
        np.zeros(5, np.uint8),
        2,
        (0.4, 0.5, 0.6),
        (0.2, 0.25, 0.3),
    )
    expected = split.images([4, 1, 2])
    for channel in range(3):
        levels = split.pixels[[4, 1, 2], channel].astype(np.float64) / 255.0
        standard = ((levels - split.mean[channel]) / split.deviation[channel]).astype(np.float32)
        assert expected[:, channel].tobytes() == standard.tobytes()
    fortran = np.empty((3, 3, 4, 4), np.float32, order="F")
    split.images([4, 1, 2], out=fortran)
    assert np.ascontiguousarray(fortran).tobytes() == expected.tobytes()


def test_a_split_holding_some_samples_gives_their_images_and_refuses_the_rest(split):
    held = split.holding([7, 3, 39, 3])
    assert len(held) == len(split) and held.held == 3
    assert held.fingerprint == split.fingerprint
    assert np.array_equal(held.labels, split.labels)
    indices = np.array([39, 3, 7, 3, -1])
    expected = split.images(indices)
    assert np.array_equal(held.images(indices).view(np.uint32), expected.view(np.uint32))
    assert np.array_equal(held.one_hot(indices), split.one_hot(indices))
    with pytest.raises(ValueError, match="sample 5 is not held"):
        held.images([3, 5])
    with pytest.raises(ValueError, match="holds the pixels of 3 of 40 samples"):
        held.pixels  # noqa: B018
    with pytest.raises(IndexError):
        held.images([40])
    with pytest.raises(ValueError, match=r"outside 0\.\.39"):
        split.holding([40])

"""The synthetic stand-ins: shapes, determinism, pinned bytes, learnable classes."""

import numpy as np
import pytest

from topos.datasets import load_cifar10, load_mnist
from topos.datasets.synthetic import synthetic_dataset

# sha256 over labels then pixels; a change here changes every synthetic result.
PINNED = {
    "cifar10": (
        "8bc00cf64ce4b3b8b5588ab6aed284b61d672a6dd5b994e5f5aa15f9a08f2fb0",
        "d08878e50fac4f78cc020f612f489cc8c93cbdc913d64d6c7a069d6fc558a8fc",
    ),
    "mnist": (
        "e5fea1f109e585e00540460eb10ef07c2e2f124dd8da14a6334f1f02752fe586",
        "0a25e1947123f861f6548c722a8f5ace8e599261423cfc62694645a229459231",
    ),
}

SHAPES = {"cifar10": ((3, 32, 32), 50_000), "mnist": ((1, 28, 28), 60_000)}
LOADERS = {"cifar10": load_cifar10, "mnist": load_mnist}


@pytest.fixture(scope="module", params=["cifar10", "mnist"])
def generated(request):
    """Each synthetic set generated once for this module, with its generation time."""
    dataset = LOADERS[request.param](None)
    return request.param, dataset, None


def test_shapes_sizes_and_balanced_classes(generated):
    name, dataset, _ = generated
    image_shape, train_count = SHAPES[name]
    assert (dataset.name, dataset.source, dataset.format) == (name, "synthetic", "synthetic")
    for split, count in ((dataset.train, train_count), (dataset.test, 10_000)):
        assert split.pixels.shape == (count, *image_shape)
        assert split.pixels.dtype == np.uint8 and split.labels.dtype == np.uint8
        assert split.class_counts() == [count // 10] * 10


def test_fingerprints_are_pinned(generated):
    name, dataset, _ = generated
    assert (dataset.train.fingerprint, dataset.test.fingerprint) == PINNED[name]
    assert dataset.fingerprint == PINNED[name][0]


def test_a_second_generation_is_byte_identical(generated):
    name, dataset, _ = generated
    again = LOADERS[name](None)
    assert np.array_equal(again.test.pixels, dataset.test.pixels)
    assert np.array_equal(again.test.labels, dataset.test.labels)
    assert again.train.fingerprint == dataset.train.fingerprint


def test_classes_are_learnable_yet_not_trivial(generated):
    """A nearest-class-mean classifier fit on 5000 training images is far above
    chance on the test split; the half-and-half blends keep it short of perfect."""
    _, dataset, _ = generated
    train, test = dataset.train, dataset.test
    features = train.images(np.arange(5000)).reshape(5000, -1)
    labels = train.labels[:5000]
    centres = np.stack([features[labels == label].mean(axis=0) for label in range(10)])
    probes = test.images(np.arange(1000)).reshape(1000, -1)
    distances = (centres**2).sum(axis=1) - 2 * probes @ centres.T
    accuracy = float(np.mean(distances.argmin(axis=1) == test.labels[:1000]))
    assert 0.5 < accuracy < 1.0


def test_small_sets_are_deterministic_and_differ_by_seed():
    def generate(seed):
        dataset = synthetic_dataset("toy", seed, (2, 6, 6), (30, 10), 3, (0.5, 0.5), (0.2, 0.2))
        return dataset.train

    first, second, other = generate(7), generate(7), generate(8)
    assert first.fingerprint == second.fingerprint
    assert first.fingerprint != other.fingerprint
    assert first.class_counts() == [10, 10, 10]

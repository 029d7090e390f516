"""Dataset: lazy splits and the description."""

import numpy as np

from topos.datasets import Dataset, Split


def tiny_split(count: int, seed: int) -> Split:
    pixels = np.full((count, 1, 2, 2), seed, dtype=np.uint8)
    return Split(pixels, np.arange(count) % 3, 3, (0.5,), (0.25,))


def test_splits_load_on_first_use_and_once():
    loads = []

    def loader(name, count):
        def load():
            loads.append(name)
            return tiny_split(count, len(loads))

        return load

    dataset = Dataset("toy", "here", "synthetic", loader("train", 4), loader("test", 2))
    assert loads == []
    assert len(dataset.train) == 4
    assert dataset.train is dataset.train
    assert loads == ["train"]
    assert dataset.fingerprint == dataset.train.fingerprint
    assert loads == ["train"]
    assert len(dataset.test) == 2
    assert loads == ["train", "test"]


def test_describe_gives_format_sizes_class_counts_and_fingerprints():
    train, test = tiny_split(5, 1), tiny_split(2, 2)
    dataset = Dataset("toy", "/data/toy", "idx", lambda: train, lambda: test)
    assert dataset.describe() == {
        "name": "toy",
        "source": "/data/toy",
        "format": "idx",
        "fingerprint": train.fingerprint,
        "splits": {
            "train": {
                "images": 5,
                "image_shape": [1, 2, 2],
                "class_counts": [2, 2, 1],
                "fingerprint": train.fingerprint,
            },
            "test": {
                "images": 2,
                "image_shape": [1, 2, 2],
                "class_counts": [1, 1, 0],
                "fingerprint": test.fingerprint,
            },
        },
    }

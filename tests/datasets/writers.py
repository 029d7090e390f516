"""Writers of tiny dataset files in the official layouts, for the tests."""

from __future__ import annotations

import gzip
import pickle
import struct
from pathlib import Path

import numpy as np

BATCHES = [f"data_batch_{number}" for number in range(1, 6)] + ["test_batch"]


def random_images(seed: int, count: int, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """uint8 pixels [count, *shape] and labels 0..9 (a test may use NumPy's generator)."""
    generator = np.random.default_rng(seed)
    pixels = generator.integers(0, 256, size=(count, *shape), dtype=np.uint8)
    labels = generator.integers(0, 10, size=count, dtype=np.uint8)
    return pixels, labels


def cifar_batches(records: int = 3) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(pixels [records, 3, 32, 32], labels) for each of the six batches."""
    return {
        name: random_images(number, records, (3, 32, 32)) for number, name in enumerate(BATCHES)
    }


def write_cifar_binary(folder: Path, batches: dict) -> Path:
    """The `cifar-10-batches-bin` layout: label byte then 3072 pixel bytes per record."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, (pixels, labels) in batches.items():
        records = np.concatenate([labels[:, None], pixels.reshape(len(labels), -1)], axis=1)
        (folder / f"{name}.bin").write_bytes(records.astype(np.uint8).tobytes())
    return folder


class Python2Pickler(pickle._Pickler):
    """Writes every str and bytes as a Python 2 byte string (BINSTRING), as the
    `cifar-10-batches-py` files were written by Python 2's cPickle."""

    dispatch = pickle._Pickler.dispatch.copy()

    def save_python2_string(self, text):
        data = text.encode("latin-1") if isinstance(text, str) else text
        if len(data) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(data)]) + data)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(data)) + data)
        self.memoize(text)

    dispatch[str] = save_python2_string
    dispatch[bytes] = save_python2_string


def python2_pickle(value) -> bytes:
    """`value` pickled as Python 2 would have, NumPy globals under `numpy.core`."""
    import io

    buffer = io.BytesIO()
    Python2Pickler(buffer, protocol=2).dump(value)
    return buffer.getvalue().replace(b"numpy._core.", b"numpy.core.")


def cifar_python_batch(pixels: np.ndarray, labels: np.ndarray, name: str) -> dict:
    """A batch dict as CIFAR-10's Python files hold it (keys as byte strings)."""
    return {
        b"batch_label": f"training batch of {name}".encode(),
        b"labels": [int(label) for label in labels],
        b"data": pixels.reshape(len(labels), -1).copy(),
        b"filenames": [f"image_{index}.png".encode() for index in range(len(labels))],
    }


def write_cifar_python(folder: Path, batches: dict, protocol: int | None = None) -> Path:
    """The `cifar-10-batches-py` layout; `protocol` None writes Python 2 style pickles."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, (pixels, labels) in batches.items():
        batch = cifar_python_batch(pixels, labels, name)
        content = python2_pickle(batch) if protocol is None else pickle.dumps(batch, protocol)
        (folder / name).write_bytes(content)
    return folder


MNIST_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def idx_bytes(array: np.ndarray) -> bytes:
    """An IDX file of unsigned bytes: magic 0x0000080R, big-endian extents, data."""
    header = struct.pack(">I", 0x800 | array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(np.uint8).tobytes()


def mnist_splits(counts=(5, 3)) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(pixels [count, 28, 28], labels) for train and test."""
    return {
        split: random_images(10 + number, count, (28, 28))
        for number, (split, count) in enumerate(zip(MNIST_FILES, counts))
    }


def write_mnist(folder: Path, splits: dict, compressed: bool = False) -> Path:
    """The four IDX files, plain or gzipped."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, (pixels, labels) in splits.items():
        for name, array in zip(MNIST_FILES[split], (pixels, labels)):
            content = idx_bytes(array)
            if compressed:
                (folder / f"{name}.gz").write_bytes(gzip.compress(content, mtime=0))
            else:
                (folder / name).write_bytes(content)
    return folder

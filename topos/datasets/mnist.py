"""MNIST: read from its IDX files, plain or gzipped, or a synthetic stand-in."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np

from topos.datasets.checks import check_labels, check_length, require_directory
from topos.datasets.dataset import Dataset
from topos.datasets.errors import DataError
from topos.datasets.split import Split
from topos.datasets.synthetic import synthetic_dataset

NAME = "mnist"
CLASSES = 10
IMAGE_SHAPE = (1, 28, 28)
MEAN = (0.1307,)
DEVIATION = (0.3081,)

# The synthetic stand-in: as many images as the real set, from a fixed seed.
SYNTHETIC_SEED = 0x3A157
SYNTHETIC_SIZES = (60_000, 10_000)

# (images, labels) file names of each split.
TRAIN_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte")
TEST_FILES = ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")

# IDX magic: two zero bytes, the element type (0x08, unsigned byte), the rank.
IMAGES_MAGIC = 0x00000803
LABELS_MAGIC = 0x00000801


def _read_bytes(path: Path) -> bytes:
    """The file's content, decompressed when its name ends in .gz."""
    try:
        if path.suffix != ".gz":
            return path.read_bytes()
        with gzip.open(path, "rb") as file:
            return file.read()
    except FileNotFoundError:
        raise DataError(path, "missing") from None
    except EOFError:
        raise DataError(path, "truncated: the gzip stream ends early") from None
    except (gzip.BadGzipFile, zlib.error) as error:
        raise DataError(path, f"corrupt gzip stream: {error}") from None


def _read_idx(path: Path, magic: int, name: str) -> np.ndarray:
    """An IDX array of unsigned bytes whose magic number must be `magic`; its
    rank is the magic's last byte."""
    content = _read_bytes(path)
    rank = magic & 0xFF
    header = 4 + 4 * rank
    unpacked = " (decompressed)" if path.suffix == ".gz" else ""
    if len(content) >= 4 and (found := int.from_bytes(content[:4], "big")) != magic:
        raise DataError(path, f"wrong magic 0x{found:08x}, expected 0x{magic:08x} ({name})")
    if len(content) < header:
        raise DataError(
            path, f"truncated: expected a header of {header} bytes, found {len(content)}"
        )
    extents = tuple(
        int.from_bytes(content[4 + 4 * axis : 8 + 4 * axis], "big") for axis in range(rank)
    )
    expected = header + int(np.prod(extents, dtype=np.int64))
    shape = "x".join(map(str, extents))
    check_length(path, len(content), expected, f"for {shape} {name}{unpacked}")
    # A read-only view on the bytes: no copy of the pixels.
    return np.frombuffer(content, dtype=np.uint8, offset=header).reshape(extents)


def _read_split(images_path: Path, labels_path: Path) -> Split:
    """One split from its images and labels files, checked against each other."""
    images = _read_idx(images_path, IMAGES_MAGIC, "images")
    if images.shape[1:] != IMAGE_SHAPE[1:]:
        raise DataError(
            images_path,
            f"holds {images.shape[1]}x{images.shape[2]} images, expected "
            f"{IMAGE_SHAPE[1]}x{IMAGE_SHAPE[2]}",
        )
    labels = _read_idx(labels_path, LABELS_MAGIC, "labels")
    if labels.shape[0] != images.shape[0]:
        raise DataError(labels_path, f"holds {labels.shape[0]} labels for {images.shape[0]} images")
    check_labels(labels_path, labels, CLASSES)
    return Split(images.reshape(-1, *IMAGE_SHAPE), labels, CLASSES, MEAN, DEVIATION)


def _find(folder: Path, name: str) -> Path:
    """The IDX file `name` in `folder`, plain or else gzipped."""
    for candidate in (folder / name, folder / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    raise DataError(folder / name, "missing (nor is there a .gz)")


def load_mnist(directory: str | Path | None = None) -> Dataset:
    """MNIST from the IDX files in `directory`, or the synthetic stand-in when None.

    Each file may be plain or gzipped (`.gz`); the plain one is read when both are
    there. Missing files are reported at once; each split is read on first use, and
    a bad file raises a one-line DataError instead of giving a partial split.
    """
    if directory is None:
        return synthetic_dataset(
            NAME, SYNTHETIC_SEED, IMAGE_SHAPE, SYNTHETIC_SIZES, CLASSES, MEAN, DEVIATION
        )
    folder = require_directory(Path(directory))
    train = [_find(folder, name) for name in TRAIN_FILES]
    test = [_find(folder, name) for name in TEST_FILES]
    compressed = [path.suffix == ".gz" for path in (*train, *test)]
    layout = "idx.gz" if all(compressed) else "idx and idx.gz" if any(compressed) else "idx"
    return Dataset(
        NAME,
        str(folder.resolve()),
        layout,
        lambda: _read_split(*train),
        lambda: _read_split(*test),
    )

"""MNIST: read from its IDX files, plain or gzipped, or a synthetic stand-in."""

from __future__ import annotations

import gzip
import math
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import numpy as np

from topos.datasets.checks import check_labels, check_length, require_directory
from topos.datasets.dataset import Dataset
from topos.datasets.errors import DataError
from topos.datasets.regular_file import file_size, open_regular_file
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

# Decompressed bytes read at a time.
CHUNK_BYTES = 1 << 20

# The most images one IDX file may hold: MNIST's 60000 and EMNIST's 697932 fit. A
# header that claims more is refused before anything is read, which bounds the
# memory a file (or a gzip stream that inflates without end) can claim.
MAXIMUM_IMAGES = 1_000_000


@contextmanager
def _opened(path: Path) -> Iterator[BinaryIO]:
    """`path`, a regular file, as a stream of its content (decompressed when it ends in .gz)."""
    with open_regular_file(path) as file:
        if path.suffix != ".gz":
            yield file
            return
        with gzip.GzipFile(fileobj=file, mode="rb") as stream:
            yield stream


def _read_exactly(stream: BinaryIO, count: int) -> bytes:
    """Up to `count` bytes: fewer only where the stream ends."""
    pieces, remaining = [], count
    while remaining > 0:
        piece = stream.read(remaining)
        if not piece:
            break
        pieces.append(piece)
        remaining -= len(piece)
    return b"".join(pieces)


def _read_into(stream: BinaryIO, count: int) -> tuple[np.ndarray, int]:
    """`count` bytes into a fresh uint8 array, and how many there were (fewer only where
    the stream ends). The array's pages are touched only as bytes arrive, so a header
    that promises more than the stream holds costs no memory."""
    buffer = np.empty(count, dtype=np.uint8)
    view, filled = memoryview(buffer), 0
    while filled < count:
        got = stream.readinto(view[filled : filled + CHUNK_BYTES])
        if not got:
            break
        filled += got
    return buffer, filled


def _read_idx(
    path: Path, magic: int, name: str, extents_after_count: tuple[int, ...]
) -> np.ndarray:
    """An IDX array of unsigned bytes whose magic number must be `magic` (its rank is the
    magic's last byte) and whose extents after the first are `extents_after_count`.

    The header is read and checked first; the body is then read to exactly the size
    the header gives, so no file makes it read more than the format allows.
    """
    rank = magic & 0xFF
    header_bytes = 4 + 4 * rank
    compressed = path.suffix == ".gz"
    unpacked = " (decompressed)" if compressed else ""
    try:
        with _opened(path) as stream:
            header = _read_exactly(stream, header_bytes)
            if len(header) >= 4 and (found := int.from_bytes(header[:4], "big")) != magic:
                raise DataError(path, f"wrong magic 0x{found:08x}, expected 0x{magic:08x} ({name})")
            if len(header) < header_bytes:
                raise DataError(
                    path,
                    f"truncated: expected a header of {header_bytes} bytes, found {len(header)}",
                )
            extents = tuple(
                int.from_bytes(header[4 + 4 * axis : 8 + 4 * axis], "big") for axis in range(rank)
            )
            _check_extents(path, extents, extents_after_count, name)
            # Exact integers: four 32-bit extents multiply past what int64 holds.
            expected = header_bytes + math.prod(extents)
            shape = "x".join(map(str, extents))
            detail = f"for {shape} {name}{unpacked}"
            if not compressed:
                check_length(path, file_size(stream), expected, detail)
            body, filled = _read_into(stream, expected - header_bytes)
            check_length(path, header_bytes + filled, expected, detail)
            if stream.read(1):
                raise DataError(path, f"too long: expected {expected} bytes {detail}, found more")
    except EOFError:
        raise DataError(path, "truncated: the gzip stream ends early") from None
    except (gzip.BadGzipFile, zlib.error) as error:
        raise DataError(path, f"corrupt gzip stream: {error}") from None
    except OSError as error:
        raise DataError(path, f"cannot be read: {error.strerror or error}") from None
    return body.reshape(extents)


def _check_extents(
    path: Path, extents: tuple[int, ...], extents_after_count: tuple[int, ...], name: str
) -> None:
    """Refuses a header whose count is beyond MAXIMUM_IMAGES or whose other extents are
    not the format's, before anything past the header is read."""
    if extents[1:] != extents_after_count:
        found = "x".join(map(str, extents[1:]))
        expected = "x".join(map(str, extents_after_count))
        raise DataError(path, f"holds {found} {name}, expected {expected}")
    if extents[0] > MAXIMUM_IMAGES:
        raise DataError(
            path,
            f"holds {extents[0]} {name}, more than the {MAXIMUM_IMAGES} topos reads from one file",
        )


def _read_split(images_path: Path, labels_path: Path) -> Split:
    """One split from its images and labels files, checked against each other."""
    images = _read_idx(images_path, IMAGES_MAGIC, "images", IMAGE_SHAPE[1:])
    labels = _read_idx(labels_path, LABELS_MAGIC, "labels", ())
    if labels.shape[0] != images.shape[0]:
        raise DataError(labels_path, f"holds {labels.shape[0]} labels for {images.shape[0]} images")
    check_labels(labels_path, labels, CLASSES)
    return Split(images.reshape(-1, *IMAGE_SHAPE), labels, CLASSES, MEAN, DEVIATION)


def _find(folder: Path, name: str) -> Path:
    """The IDX file `name` in `folder`, plain or else gzipped. Whatever stands at either
    name is taken, so a directory or a FIFO there is reported as such when it is read."""
    for candidate in (folder / name, folder / f"{name}.gz"):
        if candidate.exists() or candidate.is_symlink():
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
    folder = require_directory(directory)
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

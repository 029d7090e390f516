"""CIFAR-10: read from either official layout, or a synthetic stand-in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from topos.datasets.checks import check_labels, check_length, require_directory
from topos.datasets.dataset import Dataset
from topos.datasets.errors import DataError
from topos.datasets.restricted_unpickler import load_restricted
from topos.datasets.split import Split
from topos.datasets.synthetic import synthetic_dataset

NAME = "cifar10"
CLASSES = 10
IMAGE_SHAPE = (3, 32, 32)
IMAGE_BYTES = 3 * 32 * 32
MEAN = (0.4914, 0.4822, 0.4465)
DEVIATION = (0.2470, 0.2435, 0.2616)

# The synthetic stand-in: as many images as the real set, from a fixed seed.
SYNTHETIC_SEED = 0xC1FA510
SYNTHETIC_SIZES = (50_000, 10_000)

BINARY_LAYOUT = "cifar-10-batches-bin"
PYTHON_LAYOUT = "cifar-10-batches-py"
TRAIN_BATCHES = tuple(f"data_batch_{number}" for number in range(1, 6))
TEST_BATCH = "test_batch"

# A binary record: one label byte, then the image's three channel planes.
RECORD_BYTES = 1 + IMAGE_BYTES

# Reads one batch file: (labels, pixels [count, 3, 32, 32]); `records`, when
# given, is how many the batch must hold.
BatchReader = Callable[[Path, int | None], tuple[np.ndarray, np.ndarray]]


def _read_binary_batch(path: Path, records: int | None) -> tuple[np.ndarray, np.ndarray]:
    """One `cifar-10-batches-bin` file: records of a label byte and 3072 pixel bytes."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise DataError(path, "missing") from None
    if records is None:
        # Round a partial record up: the file is short by what the record lacks.
        records = max(1, -(-size // RECORD_BYTES))
    expected = records * RECORD_BYTES
    check_length(path, size, expected, f"({records} records of {RECORD_BYTES})")
    content = np.fromfile(path, dtype=np.uint8)
    # The file may have changed since its size was read.
    check_length(path, content.size, expected, f"({records} records of {RECORD_BYTES})")
    content = content.reshape(records, RECORD_BYTES)
    labels = content[:, 0]
    check_labels(path, labels, CLASSES)
    return labels, content[:, 1:].reshape(records, *IMAGE_SHAPE)


def _read_python_batch(path: Path, records: int | None) -> tuple[np.ndarray, np.ndarray]:
    """One `cifar-10-batches-py` file: a pickled dict with `data`, uint8 [count, 3072],
    and `labels`, a list of ints; read with the restricted unpickler."""
    batch = load_restricted(path)
    if not isinstance(batch, dict):
        raise DataError(path, f"holds a {type(batch).__name__}, expected a dict")
    # Python 2 wrote the keys as byte strings; a re-saved batch may hold text.
    keys = {key.decode("latin-1") if isinstance(key, bytes) else key: key for key in batch}
    if "data" not in keys or "labels" not in keys:
        found = ", ".join(sorted(str(key) for key in keys)) or "none"
        raise DataError(path, f"wrong pickle keys: expected data and labels, found {found}")
    data, labels = batch[keys["data"]], batch[keys["labels"]]
    if (
        not isinstance(data, np.ndarray)
        or data.dtype != np.uint8
        or data.ndim != 2
        or data.shape[1] != IMAGE_BYTES
    ):
        description = (
            f"{data.dtype} {list(data.shape)}"
            if isinstance(data, np.ndarray)
            else type(data).__name__
        )
        raise DataError(path, f"data is {description}, expected uint8 [count, {IMAGE_BYTES}]")
    try:
        labels = np.asarray(labels)
    except ValueError:  # a ragged list
        labels = np.asarray(None)
    if labels.dtype.kind not in "iu":
        raise DataError(path, "labels are not a list of integers")
    if labels.shape != (data.shape[0],):
        raise DataError(path, f"holds {labels.size} labels for {data.shape[0]} images")
    if records is not None and data.shape[0] != records:
        raise DataError(path, f"holds {data.shape[0]} images, expected {records}")
    check_labels(path, labels, CLASSES)
    return labels.astype(np.uint8), data.reshape(data.shape[0], *IMAGE_SHAPE)


def _read_split(paths: list[Path], read_batch: BatchReader) -> Split:
    """Reads batches into one split; every batch must hold as many images as the
    first, which lets the split be allocated once instead of concatenated."""
    first_labels, first_pixels = read_batch(paths[0], None)
    records = first_labels.shape[0]
    labels = np.empty(records * len(paths), dtype=np.uint8)
    pixels = np.empty((records * len(paths), *IMAGE_SHAPE), dtype=np.uint8)
    labels[:records], pixels[:records] = first_labels, first_pixels
    del first_labels, first_pixels
    for number, path in enumerate(paths[1:], start=1):
        rows = slice(number * records, (number + 1) * records)
        labels[rows], pixels[rows] = read_batch(path, records)
    return Split(pixels, labels, CLASSES, MEAN, DEVIATION)


def locate(directory: Path) -> tuple[Path, str]:
    """The batch folder and its layout, given that folder or the folder holding it."""
    require_directory(directory)
    for layout, first_batch in (
        (BINARY_LAYOUT, "data_batch_1.bin"),
        (PYTHON_LAYOUT, "data_batch_1"),
    ):
        if directory.name == layout or (directory / first_batch).is_file():
            return directory, layout
    for layout in (BINARY_LAYOUT, PYTHON_LAYOUT):
        if (directory / layout).is_dir():
            return directory / layout, layout
    raise DataError(
        directory, f"holds no CIFAR-10 batches: expected {BINARY_LAYOUT} or {PYTHON_LAYOUT}"
    )


def load_cifar10(directory: str | Path | None = None) -> Dataset:
    """CIFAR-10 from `directory`, or the synthetic stand-in when it is None.

    `directory` is a `cifar-10-batches-bin` or `cifar-10-batches-py` folder, or
    the folder holding one (the binary layout is preferred when both are there).
    Missing files are reported at once; each split is read on first use, and a
    bad file raises a one-line DataError instead of giving a partial split.
    """
    if directory is None:
        return synthetic_dataset(
            NAME, SYNTHETIC_SEED, IMAGE_SHAPE, SYNTHETIC_SIZES, CLASSES, MEAN, DEVIATION
        )
    folder, layout = locate(Path(directory))
    suffix, read_batch = (
        (".bin", _read_binary_batch) if layout == BINARY_LAYOUT else ("", _read_python_batch)
    )
    train = [folder / f"{batch}{suffix}" for batch in TRAIN_BATCHES]
    test = [folder / f"{TEST_BATCH}{suffix}"]
    for path in (*train, *test):
        if not path.is_file():
            raise DataError(path, "missing")
    return Dataset(
        NAME,
        str(folder.resolve()),
        layout,
        lambda: _read_split(train, read_batch),
        lambda: _read_split(test, read_batch),
    )

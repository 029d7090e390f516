"""CIFAR-10: read from either official layout, or a synthetic stand-in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from topos.datasets.checks import check_labels, check_length, require_directory
from topos.datasets.dataset import Dataset
from topos.datasets.errors import DataError
from topos.datasets.regular_file import file_size, open_regular_file
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

# The format's batch holds 10000 images; no file may claim more, which bounds
# what reading one can cost.
BATCH_IMAGES = 10_000

# The most bytes a Python batch may take: its pixels twice over (protocols 0 to 2
# write bytes as text, up to half as long again), and room for labels, file names
# and framing.
PYTHON_BATCH_BYTES = 2 * BATCH_IMAGES * IMAGE_BYTES + (4 << 20)

# The most pickle operations a Python batch may take: per image a label and a file
# name (two to twelve operations, by protocol) with room to spare, and a thousand
# for the dict, its keys and its framing.
PYTHON_BATCH_OPERATIONS = 16 * BATCH_IMAGES + 1000

# Reads one batch file: (labels, pixels [count, 3, 32, 32]); `records`, when
# given, is how many the batch must hold.
BatchReader = Callable[[Path, int | None], tuple[np.ndarray, np.ndarray]]


def _read_binary_batch(path: Path, records: int | None) -> tuple[np.ndarray, np.ndarray]:
    """One `cifar-10-batches-bin` file: records of a label byte and 3072 pixel bytes."""
    detail = f"({records} records of {RECORD_BYTES})"
    with open_regular_file(path) as file:
        size = file_size(file)
        if records is None:
            if size > BATCH_IMAGES * RECORD_BYTES:
                raise DataError(
                    path,
                    f"too long: {size} bytes, and a batch holds at most {BATCH_IMAGES} "
                    f"records of {RECORD_BYTES}",
                )
            # Round a partial record up: the file is short by what the record lacks.
            records = max(1, -(-size // RECORD_BYTES))
            detail = f"({records} records of {RECORD_BYTES})"
        expected = records * RECORD_BYTES
        check_length(path, size, expected, detail)
        try:
            content = np.fromfile(file, dtype=np.uint8, count=expected)
        except OSError as error:
            raise DataError(path, f"cannot be read: {error.strerror or error}") from None
    # The file may have changed since its size was read.
    check_length(path, content.size, expected, detail)
    content = content.reshape(records, RECORD_BYTES)
    labels = content[:, 0]
    check_labels(path, labels, CLASSES)
    return labels, content[:, 1:].reshape(records, *IMAGE_SHAPE)


def _describe_key(key: object) -> str:
    """A pickle key in a message: text as it is (shortened), anything else by its type.
    Never `str()` of a container: a small pickle can hold one that prints for ever."""
    if isinstance(key, bytes | str):
        text = key.decode("latin-1") if isinstance(key, bytes) else key
        return text if len(text) <= 40 else text[:37] + "..."
    return f"a {type(key).__name__}"


def _read_python_batch(path: Path, records: int | None) -> tuple[np.ndarray, np.ndarray]:
    """One `cifar-10-batches-py` file: a pickled dict with `data`, uint8 [count, 3072],
    and `labels`, a flat list of `count` ints 0..9; read with the restricted unpickler
    within the bytes and operations a batch of BATCH_IMAGES can need, and checked
    structurally before any array is built from it."""
    batch = load_restricted(
        path, PYTHON_BATCH_BYTES, PYTHON_BATCH_OPERATIONS, "CIFAR-10 Python batch"
    )
    if not isinstance(batch, dict):
        raise DataError(path, f"holds a {type(batch).__name__}, expected a dict")
    # Python 2 wrote the keys as byte strings; a re-saved batch may hold text.
    keys = {key.decode("latin-1") if isinstance(key, bytes) else key: key for key in batch}
    if "data" not in keys or "labels" not in keys:
        found = ", ".join(sorted(_describe_key(key) for key in keys)) or "none"
        raise DataError(path, f"wrong pickle keys: expected data and labels, found {found}")
    data, labels = batch[keys["data"]], batch[keys["labels"]]
    if (
        not isinstance(data, np.ndarray)
        or data.dtype != np.uint8
        or data.ndim != 2
        or data.shape[1] != IMAGE_BYTES
    ):
        description = (
            # The dtype's short code: a structured dtype's full text can be vast.
            f"{data.dtype.str if data.dtype != np.uint8 else 'uint8'} {list(data.shape)}"
            if isinstance(data, np.ndarray)
            else type(data).__name__
        )
        raise DataError(path, f"data is {description}, expected uint8 [count, {IMAGE_BYTES}]")
    count = data.shape[0]
    if not 1 <= count <= BATCH_IMAGES:
        raise DataError(path, f"holds {count} images, and a batch holds 1 to {BATCH_IMAGES}")
    labels = _label_array(path, labels, count)
    if records is not None and count != records:
        raise DataError(path, f"holds {count} images, expected {records}")
    check_labels(path, labels, CLASSES)
    return labels.astype(np.uint8), data.reshape(count, *IMAGE_SHAPE)


def _label_array(path: Path, labels: object, count: int) -> np.ndarray:
    """The labels of a Python batch as an array, once they are seen to be what the format
    defines: a flat list (or 1-D integer array) of `count` ints. Checked element by
    element before NumPy sees them, since NumPy would expand nested lists, however
    much they share, into one enormous array."""
    if isinstance(labels, np.ndarray):
        if labels.dtype.kind not in "iu" or labels.ndim != 1:
            raise DataError(path, "labels are not a list of integers")
        found = labels.shape[0]
    elif isinstance(labels, list | tuple):
        if not all(type(label) is int for label in labels):
            raise DataError(path, "labels are not a list of integers")
        found = len(labels)
    else:
        raise DataError(path, f"labels are a {type(labels).__name__}, expected a list of integers")
    if found != count:
        raise DataError(path, f"holds {found} labels for {count} images")
    # Exact ints may lie far outside int64: range-check them before converting.
    if not isinstance(labels, np.ndarray) and any(not 0 <= label < CLASSES for label in labels):
        index = next(index for index, label in enumerate(labels) if not 0 <= label < CLASSES)
        raise DataError(
            path, f"label {labels[index]} of image {index} is out of range 0..{CLASSES - 1}"
        )
    return np.asarray(labels, dtype=np.int64)


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


def _present(path: Path) -> bool:
    """Whether anything stands at `path`: a directory or a FIFO where a batch belongs is
    reported as such when it is read, not as missing."""
    return path.exists() or path.is_symlink()


def locate(directory: str | Path) -> tuple[Path, str]:
    """The batch folder and its layout, given that folder or the folder holding it."""
    directory = require_directory(directory)
    for layout, first_batch in (
        (BINARY_LAYOUT, "data_batch_1.bin"),
        (PYTHON_LAYOUT, "data_batch_1"),
    ):
        if directory.name == layout or _present(directory / first_batch):
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
    folder, layout = locate(directory)
    suffix, read_batch = (
        (".bin", _read_binary_batch) if layout == BINARY_LAYOUT else ("", _read_python_batch)
    )
    train = [folder / f"{batch}{suffix}" for batch in TRAIN_BATCHES]
    test = [folder / f"{TEST_BATCH}{suffix}"]
    for path in (*train, *test):
        if not _present(path):
            raise DataError(path, "missing")
    return Dataset(
        NAME,
        str(folder.resolve()),
        layout,
        lambda: _read_split(train, read_batch),
        lambda: _read_split(test, read_batch),
    )

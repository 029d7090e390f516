"""MNIST from tiny IDX files, plain and gzipped, and the one-line errors of bad ones."""

import gzip
import struct

import numpy as np
import pytest

from tests.datasets.writers import idx_bytes, mnist_splits, write_mnist
from topos.datasets import DataError, load_mnist


@pytest.mark.parametrize(("compressed", "file_format"), [(False, "idx"), (True, "idx.gz")])
def test_loads_exactly(tmp_path, compressed, file_format):
    splits = mnist_splits()
    write_mnist(tmp_path, splits, compressed)
    dataset = load_mnist(tmp_path)
    assert (dataset.name, dataset.format, dataset.source) == ("mnist", file_format, str(tmp_path))
    for split, (pixels, labels) in (
        (dataset.train, splits["train"]),
        (dataset.test, splits["test"]),
    ):
        assert split.pixels.shape == (len(labels), 1, 28, 28)
        assert np.array_equal(split.pixels[:, 0], pixels)
        assert np.array_equal(split.labels, labels)
        assert split.mean == (0.1307,) and split.deviation == (0.3081,)


def test_plain_and_gzipped_files_may_mix(tmp_path):
    splits = mnist_splits()
    write_mnist(tmp_path, {"train": splits["train"]}, compressed=True)
    write_mnist(tmp_path, {"test": splits["test"]})
    dataset = load_mnist(tmp_path)
    assert dataset.format == "idx and idx.gz"
    assert np.array_equal(dataset.test.labels, splits["test"][1])


def error_of(directory, split="train") -> str:
    with pytest.raises(DataError) as caught:
        getattr(load_mnist(directory), split)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.fixture
def folder(tmp_path):
    return write_mnist(tmp_path / "mnist", mnist_splits())


def test_missing_file(folder):
    (folder / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(DataError, match=r"t10k-labels-idx1-ubyte: missing \(nor is there a \.gz\)"):
        load_mnist(folder)


def test_wrong_magic(folder):
    path = folder / "train-images-idx3-ubyte"
    path.write_bytes(struct.pack(">I", 0x801) + path.read_bytes()[4:])
    assert error_of(folder) == f"{path}: wrong magic 0x00000801, expected 0x00000803 (images)"


def test_labels_file_given_images_magic(folder):
    path = folder / "train-labels-idx1-ubyte"
    path.write_bytes(idx_bytes(np.zeros((5, 28, 28), dtype=np.uint8)))
    assert error_of(folder) == f"{path}: wrong magic 0x00000803, expected 0x00000801 (labels)"


def test_truncated_images_name_expected_and_actual_bytes(folder):
    path = folder / "train-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-7])
    expected = 16 + 5 * 28 * 28
    assert error_of(folder) == (
        f"{path}: truncated: expected {expected} bytes for 5x28x28 images, found {expected - 7}"
    )


def test_truncated_header(folder):
    path = folder / "t10k-labels-idx1-ubyte"
    path.write_bytes(path.read_bytes()[:6])
    assert error_of(folder, "test") == (f"{path}: truncated: expected a header of 8 bytes, found 6")


def test_label_out_of_range(folder):
    path = folder / "t10k-labels-idx1-ubyte"
    content = bytearray(path.read_bytes())
    content[8 + 1] = 12
    path.write_bytes(bytes(content))
    assert error_of(folder, "test") == f"{path}: label 12 of image 1 is out of range 0..9"


def test_label_count_must_match_the_images(folder):
    path = folder / "train-labels-idx1-ubyte"
    path.write_bytes(idx_bytes(np.zeros(4, dtype=np.uint8)))
    assert error_of(folder) == f"{path}: holds 4 labels for 5 images"


def test_images_must_be_28_by_28(folder):
    path = folder / "train-images-idx3-ubyte"
    path.write_bytes(idx_bytes(np.zeros((5, 32, 32), dtype=np.uint8)))
    assert error_of(folder) == f"{path}: holds 32x32 images, expected 28x28"


def test_truncated_gzip(tmp_path):
    write_mnist(tmp_path, mnist_splits(), compressed=True)
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(path.read_bytes()[:-20])
    assert error_of(tmp_path) == f"{path}: truncated: the gzip stream ends early"


def test_truncated_content_inside_gzip_reports_decompressed_bytes(tmp_path):
    write_mnist(tmp_path, mnist_splits(), compressed=True)
    path = tmp_path / "t10k-images-idx3-ubyte.gz"
    path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes())[:-1]))
    expected = 16 + 3 * 28 * 28
    assert error_of(tmp_path, "test") == (
        f"{path}: truncated: expected {expected} bytes for 3x28x28 images (decompressed), "
        f"found {expected - 1}"
    )


def test_not_a_gzip_file(tmp_path):
    write_mnist(tmp_path, mnist_splits(), compressed=True)
    path = tmp_path / "train-labels-idx1-ubyte.gz"
    path.write_bytes(b"plain text, not gzip")
    assert error_of(tmp_path).startswith(f"{path}: corrupt gzip stream:")


def test_missing_directory(tmp_path):
    with pytest.raises(DataError, match=r"nothing: missing$"):
        load_mnist(tmp_path / "nothing")


@pytest.mark.parametrize(
    ("extents", "problem"),
    [
        # Four 32-bit extents whose product wraps around in int64 arithmetic.
        (
            (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),
            "holds 4294967295x4294967295 images, expected 28x28",
        ),
        ((0x10000000, 28, 28), "holds 268435456 images, more than the 1000000 topos reads"),
        ((5, 0x80000000, 0x80000000), "holds 2147483648x2147483648 images, expected 28x28"),
    ],
)
@pytest.mark.parametrize("compressed", [False, True])
def test_a_header_whose_extents_overflow_is_refused_naming_the_file(
    tmp_path, extents, problem, compressed
):
    folder = write_mnist(tmp_path / "mnist", mnist_splits(), compressed=compressed)
    name = "train-images-idx3-ubyte" + (".gz" if compressed else "")
    header = struct.pack(">I", 0x803) + struct.pack(">3I", *extents)
    content = header + bytes(5 * 28 * 28)
    (folder / name).write_bytes(gzip.compress(content) if compressed else content)
    assert error_of(folder).startswith(f"{folder / name}: {problem}")


def test_a_labels_header_far_larger_than_the_file_is_truncated_not_read(folder):
    path = folder / "train-labels-idx1-ubyte"
    path.write_bytes(struct.pack(">II", 0x801, 999_999) + bytes(5))
    assert error_of(folder) == (
        f"{path}: truncated: expected 1000007 bytes for 999999 labels, found 13"
    )


def test_a_gzip_stream_longer_than_its_header_says_is_too_long(tmp_path):
    folder = write_mnist(tmp_path, mnist_splits(), compressed=True)
    path = folder / "t10k-labels-idx1-ubyte.gz"
    content = gzip.decompress(path.read_bytes()) + bytes(1 << 20)
    path.write_bytes(gzip.compress(content))
    assert error_of(folder, "test") == (
        f"{path}: too long: expected 11 bytes for 3 labels (decompressed), found more"
    )

"""Bad data given to `topos` ends in exit 2 and one line naming it, in a real subprocess:
an empty --data, a folder a workload never reads, too few images for one batch, and
data files that are directories, FIFOs, endless devices or resource bombs."""

from __future__ import annotations

import os
import pickle
import struct

import pytest

from tests.cli.grading import TINY, one_line_error, topos
from tests.datasets.writers import cifar_batches, mnist_splits, write_cifar_python, write_mnist


@pytest.fixture
def mnist_folder(tmp_path):
    """Real MNIST files of 12 training and 4 test images: too few for a batch of 64."""
    return write_mnist(tmp_path / "mnist", mnist_splits((12, 4)))


@pytest.mark.parametrize("command", ["train", "grade"])
@pytest.mark.parametrize("data", ["", "  "])
def test_an_empty_data_path_is_refused_not_taken_for_synthetic(tmp_path, command, data):
    completed = topos(command, "--steps", "1", "--data", data, cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    assert f"--data {data!r} is empty" in one_line_error(completed)
    assert not list(tmp_path.iterdir())  # no result file, no folder


def test_train_refuses_a_dataset_too_small_for_one_batch(tmp_path, mnist_folder):
    completed = topos(
        "train", "--workload", "mnist", "--steps", "2", "--data", str(mnist_folder), cwd=tmp_path
    )
    assert completed.returncode == 2, completed.stderr
    assert one_line_error(completed) == (
        f"topos: error: {mnist_folder}: dataset 'mnist' has 12 training images, too few for "
        "workload 'mnist': a batch of 64 needs at least 65"
    )


def test_grade_refuses_a_dataset_too_small_for_one_batch(tmp_path, mnist_folder):
    completed = topos(
        "grade", "--workload", "mnist", "--steps", "2", "--data", str(mnist_folder),
        "--json", str(tmp_path / "result.json"), cwd=tmp_path,
    )  # fmt: skip
    assert completed.returncode == 2, completed.stderr
    assert "has 12 training images, too few" in one_line_error(completed)


@pytest.mark.parametrize("command", ["train", "grade"])
def test_a_workload_that_reads_no_files_refuses_data(tmp_path, mnist_folder, command):
    arguments = ["--json", str(tmp_path / "result.json")] if command == "grade" else []
    completed = topos(
        command, "--workload", TINY + "tiny", "--steps", "2", "--data", str(mnist_folder),
        *arguments, cwd=tmp_path,
    )  # fmt: skip
    assert completed.returncode == 2, completed.stderr
    assert one_line_error(completed) == (
        f"topos: error: {mnist_folder}: workload 'tiny' reads no data files (it trains on "
        "synthetic data whatever --data names); leave --data out"
    )


def idx_header(*extents: int) -> bytes:
    return struct.pack(">I", 0x800 | len(extents)) + struct.pack(f">{len(extents)}I", *extents)


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        ("directory", "is a directory, expected a regular file"),
        ("fifo", "is a FIFO, expected a regular file"),
        ("dev-zero", "is a character device, expected a regular file"),
        (idx_header(0xFFFFFFFF, 28, 28), "holds 4294967295 images, more than the 1000000"),
        (idx_header(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), "holds 4294967295x4294967295 images"),
    ],
)
def test_info_refuses_an_idx_file_that_is_no_file_or_overflows(tmp_path, damage, problem):
    folder = write_mnist(tmp_path / "mnist", mnist_splits((12, 4)))
    path = folder / "train-images-idx3-ubyte"
    path.unlink()
    if damage == "directory":
        path.mkdir()
    elif damage == "fifo":
        os.mkfifo(path)
    elif damage == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.write_bytes(damage + bytes(100))
    completed = topos("data", "info", str(folder), cwd=tmp_path, timeout=30)
    assert completed.returncode == 2, completed.stderr
    assert one_line_error(completed).startswith(f"topos: error: {path}: {problem}")


def test_info_refuses_a_python_batch_of_shared_nested_labels_at_once(tmp_path):
    folder = write_cifar_python(tmp_path / "cifar-10-batches-py", cifar_batches(2))
    level: list = [0] * 10
    for _ in range(9):
        level = [level] * 10  # a billion ints once NumPy expands it
    path = folder / "data_batch_2"
    with open(path, "rb") as file:
        batch = pickle.load(file, encoding="bytes")
    batch[b"labels"] = [level, level]
    path.write_bytes(pickle.dumps(batch, protocol=2))
    assert path.stat().st_size < 20_000
    completed = topos("data", "info", str(folder), cwd=tmp_path, timeout=30)
    assert completed.returncode == 2, completed.stderr
    assert one_line_error(completed) == (f"topos: error: {path}: labels are not a list of integers")

"""Every loader reads regular files only: a directory, a FIFO or a device where a data
file belongs is refused at once, in one line naming it, without blocking or reading."""

from __future__ import annotations

import os
import signal

import pytest

from tests.datasets.writers import (
    cifar_batches,
    mnist_splits,
    write_cifar_binary,
    write_cifar_python,
    write_mnist,
)
from topos.datasets import DataError, load_cifar10, load_mnist
from topos.datasets.regular_file import read_capped


def replace_with(path, kind):
    """Puts a `kind` ("directory", "fifo" or "device") where the file `path` was."""
    path.unlink()
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


@pytest.fixture
def deadline():
    """Fails a test that blocks for ten seconds instead of hanging the suite."""

    def expire(number, frame):
        raise TimeoutError("blocked reading a data file")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


KINDS = {"directory": "a directory", "fifo": "a FIFO", "device": "a character device"}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("write", "name", "load"),
    [
        (lambda folder: write_mnist(folder, mnist_splits()), "train-images-idx3-ubyte", load_mnist),
        (
            lambda folder: write_mnist(folder, mnist_splits(), compressed=True),
            "train-labels-idx1-ubyte.gz",
            load_mnist,
        ),
        (lambda folder: write_cifar_binary(folder, cifar_batches(2)), "data_batch_3.bin", None),
        (lambda folder: write_cifar_python(folder, cifar_batches(2)), "data_batch_1", None),
    ],
)
def test_a_loader_refuses_what_is_not_a_regular_file(tmp_path, deadline, kind, write, name, load):
    folder = write(tmp_path / "data")
    replace_with(folder / name, kind)
    with pytest.raises(DataError) as raised:
        dataset = (load or load_cifar10)(folder)
        dataset.train  # noqa: B018 - reading the split is what is tested
    assert str(raised.value) == f"{folder / name}: is {KINDS[kind]}, expected a regular file"


def test_read_capped_refuses_a_file_past_its_limit_without_reading_it(tmp_path):
    path = tmp_path / "big"
    path.write_bytes(bytes(11))
    assert read_capped(path, 11, "thing") == bytes(11)
    with pytest.raises(DataError, match=r"big: too large: 11 bytes, and a thing holds at most 10$"):
        read_capped(path, 10, "thing")


def test_an_empty_directory_name_is_refused_not_taken_for_the_current_folder(tmp_path):
    for load in (load_mnist, load_cifar10):
        with pytest.raises(DataError, match=r"^'': an empty path names no folder$"):
            load("")

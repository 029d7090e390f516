"""Loading a dataset by name and telling which one a directory holds."""

import pytest

from tests.datasets.writers import cifar_batches, mnist_splits, write_cifar_python, write_mnist
from topos.datasets import DataError, identify, load


def test_load_by_name_reads_the_directory(tmp_path):
    write_mnist(tmp_path / "m", mnist_splits())
    write_cifar_python(tmp_path / "c" / "cifar-10-batches-py", cifar_batches(1))
    assert load("mnist", tmp_path / "m").format == "idx"
    assert load("cifar10", tmp_path / "c").format == "cifar-10-batches-py"


def test_load_without_a_directory_is_synthetic():
    dataset = load("mnist")
    assert (dataset.name, dataset.source, dataset.format) == ("mnist", "synthetic", "synthetic")


def test_unknown_name():
    with pytest.raises(ValueError, match="unknown dataset 'svhn'; known: cifar10, mnist"):
        load("svhn")


def test_identify(tmp_path):
    write_mnist(tmp_path / "m", mnist_splits(), compressed=True)
    write_cifar_python(tmp_path / "c" / "cifar-10-batches-py", cifar_batches(1))
    assert identify(tmp_path / "m") == "mnist"
    assert identify(tmp_path / "c") == "cifar10"
    assert identify(tmp_path / "c" / "cifar-10-batches-py") == "cifar10"
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="empty: holds neither CIFAR-10 batches nor MNIST"):
        identify(tmp_path / "empty")
    with pytest.raises(DataError, match=r"absent: missing$"):
        identify(tmp_path / "absent")

"""Datasets: CIFAR-10 and MNIST from the user's files, or deterministic synthetic
stand-ins; the batch order; and fetching the canonical files."""

from topos.datasets.catalog import identify, load
from topos.datasets.cifar10 import load_cifar10
from topos.datasets.dataset import Dataset
from topos.datasets.errors import DataError
from topos.datasets.fetch import fetch
from topos.datasets.mnist import load_mnist
from topos.datasets.shuffle import shuffle
from topos.datasets.split import Split

__all__ = [
    "DataError",
    "Dataset",
    "Split",
    "fetch",
    "identify",
    "load",
    "load_cifar10",
    "load_mnist",
    "shuffle",
]

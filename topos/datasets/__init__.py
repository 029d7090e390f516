"""Datasets: CIFAR-10 and MNIST from the user's files, or deterministic synthetic
stand-ins; a character corpus for a language model (`TextDataset`, `load_text`); the
batch order; and fetching the canonical files."""

from topos.datasets.catalog import identify, load
from topos.datasets.cifar10 import load_cifar10
from topos.datasets.dataset import Dataset
from topos.datasets.errors import DataError
from topos.datasets.fetch import fetch
from topos.datasets.mnist import load_mnist
from topos.datasets.shuffle import shuffle
from topos.datasets.split import Split
from topos.datasets.text import TextDataset, load_text
from topos.datasets.text_split import TextSplit

__all__ = [
    "DataError",
    "Dataset",
    "Split",
    "TextDataset",
    "TextSplit",
    "fetch",
    "identify",
    "load",
    "load_cifar10",
    "load_mnist",
    "load_text",
    "shuffle",
]

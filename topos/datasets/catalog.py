"""The named datasets: load one by name, or tell which one a directory holds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from topos.datasets import cifar10, mnist, text
from topos.datasets.checks import require_directory
from topos.datasets.dataset import Dataset
from topos.datasets.errors import DataError

LOADERS: dict[str, Callable[[str | Path | None], Dataset]] = {
    cifar10.NAME: cifar10.load_cifar10,
    mnist.NAME: mnist.load_mnist,
    text.NAME: text.load_text,
}


def load(name: str, directory: str | Path | None = None) -> Dataset:
    """The dataset `name` ("cifar10", "mnist" or "text") from `directory` (for a text,
    also a file), or synthetic when None."""
    try:
        loader = LOADERS[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(sorted(LOADERS))}") from None
    return loader(directory)


def identify(directory: str | Path) -> str:
    """The name of the dataset whose files `directory` holds (a file is a text)."""
    if str(directory).strip() and Path(directory).exists() and not Path(directory).is_dir():
        return text.NAME
    folder = require_directory(directory)
    try:
        cifar10.locate(folder)
        return cifar10.NAME
    except DataError:
        pass
    names = (*mnist.TRAIN_FILES, *mnist.TEST_FILES)
    # Whatever stands at an IDX file's name counts, so a directory or a FIFO there is
    # reported as such when MNIST reads it, not as "neither".
    if any(_present(folder / name) or _present(folder / f"{name}.gz") for name in names):
        return mnist.NAME
    if _present(folder / text.FILE_NAME):
        return text.NAME
    raise DataError(
        folder,
        f"holds neither CIFAR-10 batches nor MNIST IDX files (nor a text's {text.FILE_NAME})",
    )


def _present(path: Path) -> bool:
    """Whether anything stands at `path` (a dangling symbolic link too)."""
    return path.exists() or path.is_symlink()

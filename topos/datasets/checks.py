"""The checks every loader makes, each raising a one-line DataError."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from topos.datasets.errors import DataError


def require_directory(directory: str | os.PathLike[str]) -> Path:
    """`directory` as a Path, if it is a directory. An empty path is refused: it would
    silently mean the current folder."""
    if not os.fspath(directory).strip():
        raise DataError(repr(os.fspath(directory)), "an empty path names no folder")
    path = Path(directory)
    if not path.is_dir():
        raise DataError(path, "missing" if not path.exists() else "not a directory")
    return path


def check_length(path: Path, found: int, expected: int, detail: str) -> None:
    """Refuses a file of `found` bytes where `expected` belong; `detail` says why."""
    if found != expected:
        problem = "truncated" if found < expected else "too long"
        raise DataError(path, f"{problem}: expected {expected} bytes {detail}, found {found}")


def check_labels(path: Path, labels: np.ndarray, classes: int) -> None:
    """Refuses labels outside 0..classes-1, naming the first."""
    outside = np.flatnonzero((labels < 0) | (labels >= classes))
    if outside.size:
        index = int(outside[0])
        raise DataError(
            path, f"label {int(labels[index])} of image {index} is out of range 0..{classes - 1}"
        )

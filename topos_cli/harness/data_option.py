"""The `--data` option: the synthetic stand-in, or a folder of data files (or, for a text
workload such as `gpt`, one text file) that must exist.

NumPy-free, so the grading parent can check the option before any worker starts.
"""

from __future__ import annotations

from pathlib import Path

from topos_cli.shared.errors import ToposUsageError

#: What `--data` says for the built-in synthetic stand-in.
SYNTHETIC = "synthetic"


def data_directory(data: str | None) -> str | None:
    """`None` for the synthetic stand-in (`data` None or "synthetic"), else the folder (or
    file) `data` names, resolved; a `ToposUsageError` (exit 2) if it is empty, missing or
    neither a folder nor a regular file (whether a workload reads a file is its loader's
    to say). An empty `--data ""` is refused rather than taken to mean anything."""
    if data is None or data == SYNTHETIC:
        return None
    hint = f"--data names a folder (or a text file), or '{SYNTHETIC}'"
    if not data.strip():
        raise ToposUsageError(f"--data {data!r} is empty ({hint})")
    path = Path(data)
    try:
        if not path.exists():
            raise ToposUsageError(f"{data}: no such directory ({hint})")
        if not path.is_dir() and not path.is_file():
            raise ToposUsageError(f"{data}: neither a directory nor a file ({hint})")
        return str(path.resolve())
    except OSError as error:
        raise ToposUsageError(f"{data}: cannot be read: {error.strerror or error}") from None

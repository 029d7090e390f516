"""The results a history reads: the files named, the `*.json` files and archives inside
the folders named, each loaded, or the error that says why it holds no result."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from topos_cli.result.grade_result import GradeResult
from topos_cli.result.result_archive import archive_results, is_archive
from topos_cli.result.result_file import load_result
from topos_cli.shared.errors import ToposError, ToposUsageError


def result_files(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The files named, and the `*.json` files and archives (`.zip`, `.tar.gz`: the
    artifacts of CI runners) directly inside each folder named."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            inside = [
                child
                for child in path.iterdir()
                # An archive that is no regular file (a FIFO, a link to /dev/zero) is read
                # as far as a note saying so, as a `.json` one is; a folder is not read.
                if child.suffix == ".json" or (is_archive(child) and not child.is_dir())
            ]
            files.extend(sorted(inside))
        elif path.exists():
            files.append(path)
        else:
            raise ToposUsageError(f"{path}: no such file or directory")
    return files


def loaded_results(
    paths: Sequence[str | os.PathLike[str]],
) -> Iterator[tuple[str, GradeResult | ToposError]]:
    """Every result at `paths` (files, folders, archives), named by where it was found:
    the result, or the error that says why the file holds none."""
    for path in result_files(paths):
        if is_archive(path):
            try:
                yield from archive_results(path)
            except ToposError as error:
                yield str(path), error
            continue
        try:
            yield str(path), load_result(path)
        except ToposError as error:
            yield str(path), error

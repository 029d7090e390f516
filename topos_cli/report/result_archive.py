"""Results packed in archives: the artifacts CI runners upload come down as `.zip` files
(or `.tar.gz` ones), each holding a runner's result JSON and report. `topos history` reads
the results inside them as it reads a folder's, without unpacking anything to disk.

An archive is untrusted input as any result is: only regular members named `*.json` are
read, each with the same cap as a result file, and at most `MOST_MEMBERS` of them.
"""

from __future__ import annotations

import os
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from topos_cli.result.grade_result import GradeResult
from topos_cli.result.result_file import LARGEST_RESULT_BYTES, decode_json, read_result
from topos_cli.shared.errors import ResultFileError, ToposError

#: How an archive's name ends.
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")

#: The most result files read from one archive (a runner's artifact holds a few).
MOST_MEMBERS = 10_000


def is_archive(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is named as an archive topos reads (`.zip`, `.tar.gz`, `.tgz`, `.tar`)."""
    return str(path).lower().endswith(ARCHIVE_SUFFIXES)


def member_source(archive: str | os.PathLike[str], member: str) -> str:
    """How a result inside an archive is named: `artifacts.zip:grade-cifar10.json`."""
    return f"{archive}:{member}"


def _wanted(name: str) -> bool:
    """A member named `*.json`, with no part that climbs out or hides (`..`, `.x`)."""
    parts = PurePosixPath(name).parts
    return name.lower().endswith(".json") and not any(
        part in ("..", "") or part.startswith(".") for part in parts
    )


def _zip_members(path: Path) -> Iterator[tuple[str, bytes | None]]:
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if info.is_dir() or not _wanted(info.filename):
                continue
            if info.file_size > LARGEST_RESULT_BYTES:
                yield info.filename, None
                continue
            with archive.open(info) as member:
                yield info.filename, member.read(LARGEST_RESULT_BYTES + 1)


def _tar_members(path: Path) -> Iterator[tuple[str, bytes | None]]:
    with tarfile.open(path, mode="r:*") as archive:
        for info in archive:
            if not info.isreg() or not _wanted(info.name):
                continue
            if info.size > LARGEST_RESULT_BYTES:
                yield info.name, None
                continue
            member = archive.extractfile(info)
            if member is not None:
                yield info.name, member.read(LARGEST_RESULT_BYTES + 1)


def archive_results(
    path: str | os.PathLike[str],
) -> Iterator[tuple[str, GradeResult | ToposError]]:
    """Each `*.json` member of the archive at `path`, in the archive's order: its name
    (`member_source`) and its result, or the error that says why it is none. Raises
    `ResultFileError` when the archive itself cannot be read."""
    path = Path(path)
    members = _zip_members(path) if path.suffix.lower() == ".zip" else _tar_members(path)
    try:
        for count, (name, raw) in enumerate(members):
            source = member_source(path, name)
            if count >= MOST_MEMBERS:
                raise ResultFileError(f"{path} holds more than {MOST_MEMBERS} result files")
            if raw is None or len(raw) > LARGEST_RESULT_BYTES:
                yield (
                    source,
                    ResultFileError(
                        f"{source} is not a topos result (larger than "
                        f"{LARGEST_RESULT_BYTES // (1024 * 1024)} MiB)"
                    ),
                )
                continue
            try:
                yield source, read_result(decode_json(raw, source), source)
            except ToposError as error:
                yield source, error
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError) as error:
        raise ResultFileError(f"cannot read the archive {path}: {error}") from None

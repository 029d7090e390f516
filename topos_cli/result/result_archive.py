"""Results packed in archives: the artifacts CI runners upload come down as `.zip` files
(or `.tar.gz` ones), each holding a runner's result JSON and report. `topos history` reads
the results inside them as it reads a folder's, without unpacking anything to disk.

An archive is untrusted input as any result is, read within bounds whatever it claims:

- it is opened only when it is a regular file (never a FIFO, nor a link to `/dev/zero`),
  and read whole only within the cap of a result file (`LARGEST_RESULT_BYTES`);
- at most `MOST_ENTRIES` entries of any kind are looked at, and at most
  `MOST_INFLATED_BYTES` are inflated from it in all (each member at most one byte past
  the cap of a result file), so a bomb costs seconds, not hours;
- zip entries whose data overlap (a bomb's thousand entries pointing at one member) are
  never inflated again: the first is read, the others are passed over with one note;
- only regular members named `*.json` are read; a member that is encrypted, compressed
  by a method Python lacks, or damaged is one note naming the archive and the member,
  and the rest of the history is drawn (a damaged `.tar.gz` cannot be read past the
  damage, and its note says so).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from topos_cli.result.grade_result import GradeResult
from topos_cli.result.result_file import (
    LARGEST_RESULT_BYTES,
    decode_json,
    read_regular_file,
    read_result,
)
from topos_cli.shared.errors import ResultFileError, ToposError

#: How an archive's name ends.
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")

#: The most entries (of any kind) looked at in one archive: a runner's artifact holds a few.
MOST_ENTRIES = 10_000

#: The most bytes inflated from one archive, whatever its directory declares.
MOST_INFLATED_BYTES = 2 * LARGEST_RESULT_BYTES

#: The most room a central directory may take for `MOST_ENTRIES` entries of fair names.
_LARGEST_ZIP_DIRECTORY = MOST_ENTRIES * 1024

#: What a member's read can raise when its data are damaged or of a kind Python lacks.
_MEMBER_ERRORS = (
    zipfile.BadZipFile,
    tarfile.TarError,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    OSError,
    RuntimeError,
    NotImplementedError,
    ValueError,
    struct.error,
)

#: The zip compression methods Python reads, by number.
_ZIP_METHODS = {
    zipfile.ZIP_STORED: "stored",
    zipfile.ZIP_DEFLATED: "deflate",
    zipfile.ZIP_BZIP2: "bzip2",
    zipfile.ZIP_LZMA: "lzma",
}

#: Names of the methods Python cannot read, for the note (APPNOTE 4.4.5).
_OTHER_METHODS = {9: "Deflate64", 10: "PKWARE implode", 93: "Zstandard", 95: "xz", 98: "PPMd"}


#: Why an archive of too many entries is read no further.
_MANY_ENTRIES = f"it holds more than {MOST_ENTRIES} entries; those past them are not read"


class _InflatedTooMuchError(Exception):
    """The archive inflated past `MOST_INFLATED_BYTES`."""


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


def _mebibytes(count: int) -> str:
    return f"{count // (1024 * 1024)} MiB"


def _skip(source: str, why: str) -> ResultFileError:
    """The note for a member passed over: `archive.zip:member.json is not read: why`."""
    return ResultFileError(f"{source} is not read: {why}")


class _Budget:
    """The bytes an archive may still inflate, spent as members are read."""

    def __init__(self) -> None:
        self.left = MOST_INFLATED_BYTES

    def read(self, stream: BinaryIO, *, spend: bool = True) -> bytes:
        """At most one byte more than a result file may hold, within what is left; raises
        `_InflatedTooMuchError` once the archive has inflated all it may. `spend=False`
        for a stream that spends the budget itself (a tar's, `_BoundedStream`)."""
        chunks, size = [], 0
        while size <= LARGEST_RESULT_BYTES:
            if self.left <= 0:
                raise _InflatedTooMuchError
            chunk = stream.read(min(1024 * 1024, LARGEST_RESULT_BYTES + 1 - size, self.left))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if spend:
                self.left -= len(chunk)
        return b"".join(chunks)


class _BoundedStream(io.RawIOBase):
    """A decompressed stream that refuses to give more than the archive's budget: a tar's
    members are reached by inflating all before them, skipped or not."""

    def __init__(self, stream: BinaryIO, budget: _Budget) -> None:
        self.stream, self.budget = stream, budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.budget.left <= 0:
            raise _InflatedTooMuchError
        view = memoryview(buffer).cast("B")
        data = self.stream.read(min(len(view), self.budget.left))
        view[: len(data)] = data
        self.budget.left -= len(data)
        return len(data)


def _zip_directory_claims(data: bytes) -> tuple[int, int] | None:
    """The entry count and central-directory size the end record claims, read before
    `zipfile` parses the directory (whose every entry it would otherwise parse, however
    many); None when no end record is found (then `zipfile` says what is wrong)."""
    end = data.rfind(b"PK\x05\x06", max(0, len(data) - 22 - 65535))
    if end < 0 or end + 22 > len(data):
        return None
    entries, size = struct.unpack_from("<HI", data, end + 10)
    locator = end - 20
    if locator >= 0 and data[locator : locator + 4] == b"PK\x06\x07":
        (record,) = struct.unpack_from("<Q", data, locator + 8)
        if record + 56 <= len(data) and data[record : record + 4] == b"PK\x06\x06":
            entries, size = struct.unpack_from("<QQ", data, record + 32)
    return entries, size


def _zip_results(
    path: Path, data: bytes, budget: _Budget
) -> Iterator[tuple[str, bytes | ToposError]]:
    """The `*.json` members of a zip, each read once within the budget, or the note that
    says why it is not; raises `ResultFileError` for an archive refused whole."""
    refused = ResultFileError(f"{path} is not read: it holds more than {MOST_ENTRIES} entries")
    claims = _zip_directory_claims(data)
    # `zipfile` parses every entry its directory holds, however many; its size bounds them.
    if claims is not None and (claims[0] > MOST_ENTRIES or claims[1] > _LARGEST_ZIP_DIRECTORY):
        raise refused
    archive = zipfile.ZipFile(io.BytesIO(data))
    infos = archive.infolist()
    if len(infos) > MOST_ENTRIES:
        raise refused
    # Data spans in file order: an entry whose span starts inside an earlier one shares its
    # bytes (no archiver writes that; a bomb does, to be inflated once per entry).
    shared: list[str] = []
    spans = sorted(
        (info.header_offset, info.header_offset + 30 + info.compress_size, index)
        for index, info in enumerate(infos)
    )
    overlapping, reach = set(), -1
    for start, finish, index in spans:
        if start < reach:
            overlapping.add(index)
        reach = max(reach, finish)
    for index, info in enumerate(infos):
        if info.is_dir() or not _wanted(info.filename):
            continue
        source = member_source(path, info.filename)
        if index in overlapping:
            shared.append(info.filename)
            continue
        if info.flag_bits & 0x1:
            yield source, _skip(source, "it is encrypted")
            continue
        if info.compress_type not in _ZIP_METHODS:
            method = _OTHER_METHODS.get(info.compress_type, f"method {info.compress_type}")
            yield source, _skip(source, f"it is compressed by {method}, which Python cannot read")
            continue
        if info.file_size > LARGEST_RESULT_BYTES:
            yield source, _too_large(source)
            continue
        try:
            with archive.open(info) as member:
                yield source, budget.read(member)
        except _InflatedTooMuchError:
            raise
        except _MEMBER_ERRORS as error:
            yield source, _skip(source, f"it is damaged ({_reason(error)})")
    if shared:
        many = len(shared) > 1
        more = f" and {len(shared) - 1} more entries" if many else ""
        yield (
            str(path),
            ResultFileError(
                f"{member_source(path, shared[0])}{more} {'are' if many else 'is'} not read: "
                f"{'their' if many else 'its'} data overlap another entry's, as a zip bomb's do"
            ),
        )


def _decompressed(data: bytes) -> BinaryIO:
    """The tar stream inside `data`, by its magic bytes (gzip, bzip2, xz, or none)."""
    raw = io.BytesIO(data)
    if data[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if data[:3] == b"BZh":
        return bz2.BZ2File(raw)
    if data[:6] == b"\xfd7zXZ\x00":
        return lzma.LZMAFile(raw)
    return raw


def _tar_results(
    path: Path, data: bytes, budget: _Budget
) -> Iterator[tuple[str, bytes | ToposError]]:
    """The `*.json` members of a tar (compressed or not), read as a stream (`r|`: in
    order, nothing sought) to its very end before any is given: a compressed stream's
    checksum is checked only there, and a flipped byte may inflate without complaint
    before it. A damaged stream gives no result at all (which member the damage spoiled
    cannot be told), only one note naming the archive and the member it was found in."""
    stream = io.BufferedReader(_BoundedStream(_decompressed(data), budget))
    read: list[tuple[str, bytes | ToposError]] = []
    seen: str | None = None  # the last member whose header was read
    try:
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            for count, info in enumerate(archive):
                if count >= MOST_ENTRIES:
                    read.append((str(path), _skip(str(path), _MANY_ENTRIES)))
                    break
                seen = info.name
                archive.members.clear()  # a stream needs none of the members behind it
                if not info.isreg() or not _wanted(info.name):
                    continue
                source = member_source(path, info.name)
                if info.size > LARGEST_RESULT_BYTES:
                    read.append((source, _too_large(source)))
                    continue
                member = archive.extractfile(info)
                if member is not None:
                    read.append((source, budget.read(member, spend=False)))
            else:
                while stream.read(1024 * 1024):  # to the end: the checksum
                    pass
    except _MEMBER_ERRORS as error:
        where = str(path) if seen is None else member_source(path, seen)
        yield (
            str(path),
            ResultFileError(
                f"{where} is damaged ({_reason(error)}): none of {path}'s results is read, "
                f"as any of them may be wrong"
            ),
        )
        return
    yield from read


def _reason(error: BaseException) -> str:
    """An error's own words, short: `invalid distance too far back`."""
    text = " ".join(str(error).split()) or type(error).__name__
    return re.sub(r"^(zlib error: )?Error -?\d+ while decompressing data: ", "", text)


def _too_large(source: str) -> ResultFileError:
    return ResultFileError(
        f"{source} is not a topos result (larger than {_mebibytes(LARGEST_RESULT_BYTES)})"
    )


def archive_results(
    path: str | os.PathLike[str],
) -> Iterator[tuple[str, GradeResult | ToposError]]:
    """Each `*.json` member of the archive at `path`, in the archive's order: its name
    (`member_source`) and its result, or the error that says why it is none (also for the
    members passed over). Raises `ResultFileError` when the archive itself cannot be read:
    not a regular file, larger than a result file may be, or not an archive at all."""
    path = Path(path)
    try:
        data = read_regular_file(path)
    except FileNotFoundError:
        raise ResultFileError(f"{path}: no such file") from None
    except OSError as error:
        raise ResultFileError(f"cannot read the archive {path}: {error.strerror}") from None
    if len(data) > LARGEST_RESULT_BYTES:
        raise ResultFileError(
            f"{path} is not read: an archive is read up to {_mebibytes(LARGEST_RESULT_BYTES)}"
        )
    budget = _Budget()
    kind = _zip_results if path.name.lower().endswith(".zip") else _tar_results
    members = kind(path, data, budget)
    while True:
        try:
            source, raw = next(members)
        except StopIteration:
            return
        except _InflatedTooMuchError:
            yield (
                str(path),
                ResultFileError(
                    f"{path}: the members after the {_mebibytes(MOST_INFLATED_BYTES)} an "
                    f"archive may inflate are not read"
                ),
            )
            return
        except ToposError:
            raise
        except _MEMBER_ERRORS as error:
            raise ResultFileError(f"cannot read the archive {path}: {_reason(error)}") from None
        if isinstance(raw, ToposError):
            yield source, raw
            continue
        if len(raw) > LARGEST_RESULT_BYTES:
            yield source, _too_large(source)
            continue
        try:
            yield source, read_result(decode_json(raw, source), source)
        except ToposError as error:
            yield source, error

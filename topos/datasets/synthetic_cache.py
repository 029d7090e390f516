"""SyntheticCache: generated synthetic splits (and texts) kept on disk, so a grade's workers
load them in a blink instead of regenerating them each.

The cache lives in `$TOPOS_CACHE_DIR`, else `$XDG_CACHE_HOME/topos`, else
`~/.cache/topos`; `TOPOS_CACHE_DIR=off` disables it. A file is named by the
generator's version and the split's seed and size, written atomically, and
trusted only if it passes the check recorded beside it, so a damaged file is
regenerated rather than used. Where the folder cannot be written the cache is
silently skipped: it is a speed-up, never a requirement.

The sidecar records the arrays' sha256 (their fingerprint) and a CRC-32 over
that sha256 and the arrays: a read checks the CRC, three times quicker than
the sha256 over cifar10's 150 MB, and damage to the arrays or to the recorded
sha256 fails it. An entry whose sidecar has no CRC (written before it was
recorded) is checked by its sha256 once and its sidecar completed. The arrays
are mapped from the file, not read: a worker that keeps 56 of cifar10's 147 MiB
copies only those, and the mapping goes with the whole split.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import mmap
import os
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, NamedTuple

import numpy as np

from topos.datasets.regular_file import file_size, open_regular_file, read_capped
from topos.system.atomic_file import replace_atomically

# Bump whenever the synthetic recipe changes, so no stale bytes are ever read.
GENERATOR_VERSION = 1


def cache_directory() -> Path | None:
    """Where cached splits live, or None when caching is off."""
    configured = os.environ.get("TOPOS_CACHE_DIR")
    if configured is not None:
        return None if configured.lower() in ("", "off", "0", "no") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "topos"


#: The arrays of an entry by name: a split's `pixels` and `labels`, a text's `text`.
Arrays = dict[str, np.ndarray]


def _check(arrays: Arrays, digest: str) -> int:
    """CRC-32 over the sha256 `digest` (its hex text), then the arrays' bytes in sorted name
    order: what a read verifies before it trusts the entry and its recorded sha256."""
    check = zlib.crc32(digest.encode("ascii"))
    for name in sorted(arrays):
        check = zlib.crc32(np.ascontiguousarray(arrays[name]).data, check)
    return check


def _digest(arrays: Arrays) -> str:
    """sha256 over the arrays' bytes, in sorted name order (a split: labels, then pixels)."""
    digest = hashlib.sha256()
    # The arrays' own buffers: `.tobytes()` would copy the 150 MB of pixels once more
    # and double the loading process's peak memory.
    for name in sorted(arrays):
        digest.update(np.ascontiguousarray(arrays[name]).data)
    return digest.hexdigest()


# The most bytes a sidecar holds: one short JSON object.
SIDECAR_BYTES = 4096

# What np.savez adds to the arrays' bytes: two .npy headers and the zip's records.
ARCHIVE_OVERHEAD_BYTES = 64 * 1024


def _read(path: Path, shapes: dict[str, tuple[int, ...]]) -> tuple[Arrays, str] | None:
    """The entry at `path` and its sha256 if it is sound, else None. Whatever is wrong
    with it (a sidecar that is no object, a FIFO or a directory in its place, a damaged
    archive, arrays of another shape) is a miss, never an error: the entry is rebuilt."""
    try:
        meta = json.loads(read_capped(path.with_suffix(".json"), SIDECAR_BYTES, "cache sidecar"))
        if not isinstance(meta, dict) or not isinstance(meta.get("sha256"), str):
            return None
        volume = sum(math.prod(shape) for shape in shapes.values())
        with open_regular_file(path) as file:
            if file_size(file) > volume + ARCHIVE_OVERHEAD_BYTES:
                return None
            # Read-only and private to this process; it outlives the file's descriptor,
            # and is unmapped when the last array over it is freed.
            mapping = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
            with zipfile.ZipFile(file) as archive:
                arrays = {
                    name: _array(file, archive, name, shape, mapping)
                    for name, shape in shapes.items()
                }
    # A cache is a speed-up, never a requirement: any failure to read it (even a
    # RecursionError from JSON nested without end) means "generate afresh".
    except Exception:
        return None
    if any(array is None for array in arrays.values()):
        return None
    digest, check = meta["sha256"], meta.get("crc32")
    if isinstance(check, int) and not isinstance(check, bool):
        return (arrays, digest) if check == _check(arrays, digest) else None
    if digest != _digest(arrays):
        return None
    _write_sidecar(path, digest, _check(arrays, digest))  # checked by its CRC from now on
    return arrays, digest


#: The fixed part of a zip member's local header; its name and extra field follow.
LOCAL_HEADER = struct.Struct("<4s22xHH")


def _array(
    file: BinaryIO,
    archive: zipfile.ZipFile,
    name: str,
    shape: tuple[int, ...],
    mapping: mmap.mmap,
) -> np.ndarray | None:
    """The uint8 array `name` of `shape` in an .npz archive, read-only over `mapping` (the
    file mapped), or None when its member or header says anything else. The member is
    stored (np.savez compresses nothing), so its bytes lie in the file as they are: a
    view of them copies nothing, where zipfile's chunked reads and CRC took four times
    as long for cifar10's 150 MB (the sidecar's CRC checks every byte)."""
    member = archive.getinfo(f"{name}.npy")
    if member.compress_type != zipfile.ZIP_STORED:
        return None
    file.seek(member.header_offset)
    signature, name_length, extra_length = LOCAL_HEADER.unpack(file.read(LOCAL_HEADER.size))
    if signature != b"PK\x03\x04":
        return None
    start = member.header_offset + LOCAL_HEADER.size + name_length + extra_length
    file.seek(start)
    version = np.lib.format.read_magic(file)
    if version == (1, 0):
        header = np.lib.format.read_array_header_1_0(file)
    elif version == (2, 0):
        header = np.lib.format.read_array_header_2_0(file)
    else:
        return None
    found_shape, fortran_order, dtype = header
    if tuple(found_shape) != shape or fortran_order or dtype != np.uint8:
        return None
    volume = math.prod(shape)
    if file.tell() - start + volume != member.file_size:
        return None
    offset = file.tell()
    if offset + volume > len(mapping):
        return None
    return np.frombuffer(mapping, dtype=np.uint8, count=volume, offset=offset).reshape(shape)


def _write(path: Path, arrays: Arrays, digest: str) -> None:
    """Stores an entry (its sha256 `digest` in the sidecar): each file written to a
    temporary beside it, then renamed into place. Where that fails (no space, no
    permission, a directory in the way) the temporaries and the half-made entry are
    removed, so a failed write leaves nothing."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    try:
        replace_atomically(path, lambda handle: np.savez(handle, **arrays))
        replace_atomically(
            path.with_suffix(".json"),
            lambda handle: handle.write(_sidecar_text(digest, _check(arrays, digest))),
        )
    except BaseException as error:
        # The archive may be new and its sidecar old: neither is worth keeping.
        for leftover in (path, path.with_suffix(".json")):
            _remove(leftover)
        if not isinstance(error, OSError):
            raise


def _sidecar_text(digest: str, check: int) -> bytes:
    """A sidecar's bytes: the arrays' sha256 and the CRC a read verifies."""
    return json.dumps({"sha256": digest, "crc32": check}).encode()


def _write_sidecar(path: Path, digest: str, check: int) -> None:
    """Replaces the sidecar of the entry at `path` atomically; a failure leaves the old one
    (still sound, only slower to check)."""
    with contextlib.suppress(OSError):
        replace_atomically(
            path.with_suffix(".json"), lambda handle: handle.write(_sidecar_text(digest, check))
        )


def _remove(path: Path) -> None:
    """Removes a file if it is there and is a file; never raises."""
    try:
        if path.is_symlink() or path.is_file():
            path.unlink()
    except OSError:
        pass


class CachedSplit(NamedTuple):
    """A split's arrays and the sha256 over its labels, then its pixels (its fingerprint),
    or None where the cache is off (then nothing computed it)."""

    pixels: np.ndarray
    labels: np.ndarray
    sha256: str | None


def cached_split(
    key: str, shape: tuple[int, ...], generate: Callable[[], tuple[np.ndarray, np.ndarray]]
) -> CachedSplit:
    """The pixels and labels of the split named `key`, from the cache when it holds a sound
    copy of `shape`, else from `generate()` (and then stored for next time)."""

    def arrays() -> Arrays:
        pixels, labels = generate()
        return {"pixels": pixels, "labels": labels}

    found, digest = _cached(key, {"pixels": shape, "labels": (shape[0],)}, arrays)
    return CachedSplit(found["pixels"], found["labels"], digest)


def cached_text(key: str, length: int, generate: Callable[[], np.ndarray]) -> np.ndarray:
    """The uint8 bytes `[length]` of the synthetic text named `key`, from the cache when
    it holds a sound copy, else from `generate()` (and then stored for next time)."""
    return _cached(key, {"text": (length,)}, lambda: {"text": generate()})[0]["text"]


def _cached(
    key: str, shapes: dict[str, tuple[int, ...]], generate: Callable[[], Arrays]
) -> tuple[Arrays, str | None]:
    """The arrays of entry `key` of `shapes`, cached or generated (and then stored), and
    their sha256 (None when the cache is off)."""
    directory = cache_directory()
    if directory is None:
        return generate(), None
    path = directory / f"synthetic-v{GENERATOR_VERSION}-{key}.npz"
    found = _read(path, shapes)
    if found is not None:
        return found
    arrays = generate()
    digest = _digest(arrays)
    _write(path, arrays, digest)
    return arrays, digest

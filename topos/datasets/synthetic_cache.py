"""SyntheticCache: generated synthetic splits (and texts) kept on disk, so a grade's workers
load them in a blink instead of regenerating them each.

The cache lives in `$TOPOS_CACHE_DIR`, else `$XDG_CACHE_HOME/topos`, else
`~/.cache/topos`; `TOPOS_CACHE_DIR=off` disables it. A file is named by the
generator's version and the split's seed and size, written atomically, and
trusted only if its fingerprint matches the one recorded beside it, so a
damaged file is regenerated rather than used. Where the folder cannot be
written the cache is silently skipped: it is a speed-up, never a requirement.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, NamedTuple

import numpy as np

from topos.datasets.regular_file import file_size, open_regular_file, read_capped

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
            with zipfile.ZipFile(file) as archive:
                arrays = {
                    name: _array(file, archive, name, shape) for name, shape in shapes.items()
                }
    # A cache is a speed-up, never a requirement: any failure to read it (even a
    # RecursionError from JSON nested without end) means "generate afresh".
    except Exception:
        return None
    if any(array is None for array in arrays.values()) or meta["sha256"] != _digest(arrays):
        return None
    return arrays, meta["sha256"]


#: The fixed part of a zip member's local header; its name and extra field follow.
LOCAL_HEADER = struct.Struct("<4s22xHH")


def _array(
    file: BinaryIO, archive: zipfile.ZipFile, name: str, shape: tuple[int, ...]
) -> np.ndarray | None:
    """The uint8 array `name` of `shape` in an .npz archive, or None when its member or
    header says anything else: checked before the array is allocated, so no header can
    claim more. The member is stored (np.savez compresses nothing), so its bytes are
    read straight from the file into the array: zipfile's chunked reads and CRC took
    four times as long for cifar10's 150 MB, and the sidecar's sha256 checks every byte."""
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
    array = np.empty(shape, dtype=np.uint8)
    if file.readinto(memoryview(array.reshape(-1))) != volume:
        return None
    return array


def _write(path: Path, arrays: Arrays, digest: str) -> None:
    """Stores an entry (its sha256 `digest` in the sidecar): each file written to a
    temporary beside it, then renamed into place. Where that fails (no space, no
    permission, a directory in the way) the temporaries and the half-made entry are
    removed, so a failed write leaves nothing."""
    temporaries: list[str] = []
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for target, write in (
            (path, lambda handle: np.savez(handle, **arrays)),
            (
                path.with_suffix(".json"),
                lambda handle: handle.write(json.dumps({"sha256": digest}).encode()),
            ),
        ):
            descriptor, temporary = tempfile.mkstemp(dir=path.parent, suffix=".partial")
            temporaries.append(temporary)
            with os.fdopen(descriptor, "wb") as handle:
                write(handle)
            os.replace(temporary, target)
            temporaries.remove(temporary)
    except BaseException as error:
        # Interrupted too: a Ctrl-C in the middle of 47 MB must not leave them behind.
        for temporary in temporaries:
            _remove(Path(temporary))
        if temporaries or path.exists():
            # The archive may be new and its sidecar old: neither is worth keeping.
            for leftover in (path, path.with_suffix(".json")):
                _remove(leftover)
        if not isinstance(error, OSError):
            raise


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

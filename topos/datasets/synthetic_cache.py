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
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

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


def _read(path: Path, shapes: dict[str, tuple[int, ...]]) -> Arrays | None:
    """The entry at `path` if it is sound, else None. Whatever is wrong with it (a
    sidecar that is no object, a FIFO or a directory in its place, a damaged archive,
    arrays of another shape) is a miss, never an error: the entry is then rebuilt."""
    try:
        meta = json.loads(read_capped(path.with_suffix(".json"), SIDECAR_BYTES, "cache sidecar"))
        if not isinstance(meta, dict) or not isinstance(meta.get("sha256"), str):
            return None
        volume = sum(math.prod(shape) for shape in shapes.values())
        with open_regular_file(path) as file:
            if file_size(file) > volume + ARCHIVE_OVERHEAD_BYTES:
                return None
            with zipfile.ZipFile(file) as archive:
                arrays = {name: _array(archive, name, shape) for name, shape in shapes.items()}
    # A cache is a speed-up, never a requirement: any failure to read it (even a
    # RecursionError from JSON nested without end) means "generate afresh".
    except Exception:
        return None
    if any(array is None for array in arrays.values()) or meta["sha256"] != _digest(arrays):
        return None
    return arrays


def _array(archive: zipfile.ZipFile, name: str, shape: tuple[int, ...]) -> np.ndarray | None:
    """The uint8 array `name` of `shape` in an .npz archive, or None when its header says
    anything else: checked before the array is allocated, so no header can claim more."""
    with archive.open(f"{name}.npy") as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            header = np.lib.format.read_array_header_1_0(member)
        elif version == (2, 0):
            header = np.lib.format.read_array_header_2_0(member)
        else:
            return None
    found_shape, fortran_order, dtype = header
    if tuple(found_shape) != shape or fortran_order or dtype != np.uint8:
        return None
    with archive.open(f"{name}.npy") as member:
        return np.lib.format.read_array(member, allow_pickle=False)


def _write(path: Path, arrays: Arrays) -> None:
    """Stores an entry: each file written to a temporary beside it, then renamed into
    place. Where that fails (no space, no permission, a directory in the way) the
    temporaries and the half-made entry are removed, so a failed write leaves nothing."""
    temporaries: list[str] = []
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for target, write in (
            (path, lambda handle: np.savez(handle, **arrays)),
            (
                path.with_suffix(".json"),
                lambda handle: handle.write(json.dumps({"sha256": _digest(arrays)}).encode()),
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


def cached_split(
    key: str, shape: tuple[int, ...], generate: Callable[[], tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """The (pixels, labels) of the split named `key`, from the cache when it holds a sound
    copy of `shape`, else from `generate()` (and then stored for next time)."""

    def arrays() -> Arrays:
        pixels, labels = generate()
        return {"pixels": pixels, "labels": labels}

    found = _cached(key, {"pixels": shape, "labels": (shape[0],)}, arrays)
    return found["pixels"], found["labels"]


def cached_text(key: str, length: int, generate: Callable[[], np.ndarray]) -> np.ndarray:
    """The uint8 bytes `[length]` of the synthetic text named `key`, from the cache when
    it holds a sound copy, else from `generate()` (and then stored for next time)."""
    return _cached(key, {"text": (length,)}, lambda: {"text": generate()})["text"]


def _cached(key: str, shapes: dict[str, tuple[int, ...]], generate: Callable[[], Arrays]):
    """The arrays of entry `key` of `shapes`, cached or generated (and then stored)."""
    directory = cache_directory()
    if directory is None:
        return generate()
    path = directory / f"synthetic-v{GENERATOR_VERSION}-{key}.npz"
    found = _read(path, shapes)
    if found is not None:
        return found
    arrays = generate()
    _write(path, arrays)
    return arrays

"""SyntheticCache: generated synthetic splits kept on disk, so a grade's workers load
them in a blink instead of regenerating them each.

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
import os
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

# Bump whenever the synthetic recipe changes, so no stale bytes are ever read.
GENERATOR_VERSION = 1


def cache_directory() -> Path | None:
    """Where cached splits live, or None when caching is off."""
    configured = os.environ.get("TOPOS_CACHE_DIR")
    if configured is not None:
        return None if configured.lower() in ("", "off", "0", "no") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "topos"


def _digest(pixels: np.ndarray, labels: np.ndarray) -> str:
    digest = hashlib.sha256()
    # The arrays' own buffers: `.tobytes()` would copy the 150 MB of pixels once more
    # and double the loading process's peak memory.
    digest.update(np.ascontiguousarray(labels).data)
    digest.update(np.ascontiguousarray(pixels).data)
    return digest.hexdigest()


def _read(path: Path, expected_shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray] | None:
    try:
        meta = json.loads(path.with_suffix(".json").read_text())
        with np.load(path, allow_pickle=False) as archive:
            pixels, labels = archive["pixels"], archive["labels"]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None
    if pixels.shape != expected_shape or pixels.dtype != np.uint8 or labels.dtype != np.uint8:
        return None
    if meta.get("sha256") != _digest(pixels, labels):
        return None
    return pixels, labels


def _write(path: Path, pixels: np.ndarray, labels: np.ndarray) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for target, write in (
            (path, lambda handle: np.savez(handle, pixels=pixels, labels=labels)),
            (
                path.with_suffix(".json"),
                lambda handle: handle.write(
                    json.dumps({"sha256": _digest(pixels, labels)}).encode()
                ),
            ),
        ):
            descriptor, temporary = tempfile.mkstemp(dir=path.parent, suffix=".partial")
            with os.fdopen(descriptor, "wb") as handle:
                write(handle)
            os.replace(temporary, target)
    except OSError:
        return


def cached_split(
    key: str, shape: tuple[int, ...], generate: Callable[[], tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """The (pixels, labels) of the split named `key`, from the cache when it holds a sound
    copy of `shape`, else from `generate()` (and then stored for next time)."""
    directory = cache_directory()
    if directory is None:
        return generate()
    path = directory / f"synthetic-v{GENERATOR_VERSION}-{key}.npz"
    found = _read(path, shape)
    if found is not None:
        return found
    pixels, labels = generate()
    _write(path, pixels, labels)
    return pixels, labels

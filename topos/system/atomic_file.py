"""Writing a file so that a reader sees the old one or the new one, never half of one.

The new content goes to a temporary file beside the target (the same file system, so
the rename is atomic), is flushed and synced to disk, and is renamed over the target;
whatever stops the write, even an interrupt, removes the temporary and leaves the old
file as it was.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def replace_atomically(target: str | os.PathLike[str], write: Callable[[BinaryIO], object]) -> None:
    """Writes `target` with `write(handle)` through a temporary beside it, renamed into
    place; raises the `OSError` for the caller to put in words. The folder must exist."""
    target = Path(target)
    temporary = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        # 0o666 lets the umask decide the mode, as for any new file (mkstemp would leave
        # it readable by its owner only).
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(descriptor, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    _sync_directory(target.parent)


def write_bytes_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    """Writes `data` to `path` atomically, making its folder if missing; a symbolic link is
    written through (its target replaced, the link kept). Raises `OSError`."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    replace_atomically(target, lambda handle: handle.write(data))


def _sync_directory(directory: Path) -> None:
    """Flushes a directory's entries, so the rename itself survives a power cut (best effort)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # not every platform opens directories; the rename is still atomic
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)

"""Writing a file so that a reader sees the old one or the new one, never half of one."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


def write_bytes_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    """Writes `data` to `path` through a temporary file beside it, renamed over the target.

    The folder is created if missing. On any failure, even an interrupt, the
    temporary file is removed and the old file is left as it was; an
    `OSError` is raised for the caller to put in words.
    """
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        # 0o666 lets the umask decide the mode, as for any new file.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise

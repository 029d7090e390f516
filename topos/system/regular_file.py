"""Regular files only: open a file without blocking on a FIFO, and read it with a cap.

A path where a data file or a result belongs may name anything: a directory, a FIFO
(whose open blocks until a writer comes), `/dev/zero` (endless), a socket. A file is
opened without blocking and checked on the open descriptor, so a FIFO can neither hang
the open nor be swapped in between a check and the open; it is read with a cap, so an
endless file is never read whole. Callers put the errors in their own words.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

# What a path that is not a regular file holds, by the stat test that tells it.
KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFileError(OSError):
    """The path names something other than a regular file; `kind` says what, in words."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(f"{path} is {kind}")
        self.kind = kind


def kind_of(mode: int) -> str:
    """What a file of st_mode `mode` is, in words ("a FIFO", "a directory", ...)."""
    for test, kind in KINDS:
        if test(mode):
            return kind
    return "not a regular file"


def open_regular_file(path: str | os.PathLike[str]) -> BinaryIO:
    """`path` opened for binary reading, if it is a regular file; raises
    `NotRegularFileError` for anything else, and `OSError` when it cannot be opened."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(path, kind_of(mode))
        # Reads of a regular file never block; blocking mode is what file objects expect.
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def read_at_most(stream: BinaryIO, limit: int) -> bytes:
    """At most `limit + 1` bytes of `stream`: one more than allowed tells a caller it is
    too large, without reading the rest."""
    chunks, size = [], 0
    while size <= limit:
        chunk = stream.read(min(1024 * 1024, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)

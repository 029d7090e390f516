"""Regular files only: open a data file without blocking on a FIFO or reading an endless device.

A path where a data file belongs may name anything: a directory, a FIFO (whose
open blocks until a writer comes), `/dev/zero` (endless), a socket. Every
loader opens its files through `open_regular_file`, which refuses all but a
regular file in one line, and reads through `read_capped`, which never reads
more than the format allows.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from topos.datasets.errors import DataError
from topos.system import regular_file


def open_regular_file(path: str | os.PathLike[str]) -> BinaryIO:
    """`path` opened for binary reading, if it is a regular file; else a one-line DataError.

    Opened without blocking and checked on the open descriptor, so a FIFO can
    neither hang the open nor be swapped in between a check and the open.
    """
    path = Path(path)
    try:
        return regular_file.open_regular_file(path)
    except FileNotFoundError:
        raise DataError(path, "missing") from None
    except IsADirectoryError:
        raise DataError(path, "is a directory, expected a file") from None
    except regular_file.NotRegularFileError as error:
        raise DataError(path, f"is {error.kind}, expected a regular file") from None
    except OSError as error:
        raise DataError(path, f"cannot be opened: {error.strerror or error}") from None


def file_size(file: BinaryIO) -> int:
    """The size in bytes of an open regular file."""
    return os.fstat(file.fileno()).st_size


def read_capped(path: str | os.PathLike[str], limit: int, what: str) -> bytes:
    """The content of regular file `path`, refused without reading it when it holds more
    than `limit` bytes, the most a `what` can hold."""
    with open_regular_file(path) as file:
        size = file_size(file)
        if size > limit:
            raise DataError(path, f"too large: {size} bytes, and a {what} holds at most {limit}")
        # The file may grow after the size was read; never read past the limit.
        content = regular_file.read_at_most(file, limit)
    if len(content) > limit:
        raise DataError(path, f"too large: over {limit} bytes, and a {what} holds at most {limit}")
    return content

"""A user code error: an exception whose traceback passes through the user's own code.

Whatever a workload's `record`, `load_dataset`, `feeds`, `batches`, `optimizer` or
`adapt` raises is the user's mistake, not topos's, even when the exception is raised
deeper, inside topos or NumPy, by something the user's line called. `user_code_error`
tells the two apart by the traceback: the innermost frame that belongs neither to topos
(the library, its built-in workloads, the `topos` command) nor to Python's own or an
installed package's files is the user's line, and the one-line message names it.
"""

from __future__ import annotations

import os
import sysconfig
import traceback

__all__ = ["user_code_error", "user_line"]


def _folder(path: str) -> str:
    return os.path.join(os.path.abspath(path), "")


#: topos's own frames: the library (built-in workloads included: an error there is a bug
#: of ours) and the command beside it.
_TOPOS = _folder(os.path.dirname(os.path.dirname(__file__)))
_NOT_USERS = (
    _TOPOS,
    _folder(os.path.join(os.path.dirname(os.path.dirname(_TOPOS)), "topos_cli")),
    # Python's own modules and installed packages (NumPy, typer): a user's line calls them.
    *(
        _folder(path)
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (path := sysconfig.get_paths().get(key))
    ),
)


def _is_users(filename: str) -> bool:
    # `<frozen importlib._bootstrap>` and `<string>` are no file of the user's.
    if filename.startswith("<"):
        return False
    return not os.path.abspath(filename).startswith(_NOT_USERS)


def user_code_error(error: BaseException) -> str | None:
    """The one line for `error` if it was raised in, or from a call made by, the user's
    code: `AttributeError in your workload at path/file.py:7 (in record): message`;
    `None` when no frame of its traceback is the user's (a bug of topos's own)."""
    frames = traceback.extract_tb(error.__traceback__)
    users = [frame for frame in frames if _is_users(frame.filename)]
    if not users:
        return None
    frame = users[-1]
    message = " ".join(str(error).split())
    text = f"{type(error).__name__} in your workload at {_short(frame.filename)}:{frame.lineno}"
    text += f" (in {frame.name})"
    return f"{text}: {message}" if message else text


def user_line(error: BaseException) -> str | None:
    """Where the user's code raised `error`, `path/file.py:7` (the innermost frame of the
    user's), or `None` when no frame of its traceback is the user's."""
    users = [
        frame for frame in traceback.extract_tb(error.__traceback__) if _is_users(frame.filename)
    ]
    return f"{_short(users[-1].filename)}:{users[-1].lineno}" if users else None


def _short(filename: str) -> str:
    """`filename` relative to the working directory when it lies below it."""
    relative = os.path.relpath(os.path.abspath(filename))
    return filename if relative.startswith("..") else relative

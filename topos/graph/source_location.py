"""SourceLocation: where a node was recorded — the first frame of the user's code.

A wrong derivative rule is only useful to report if the user can find the
expression that recorded the node; the tape keeps the file and line of the
innermost caller outside the library's machinery and the grader (a layer's own
lines inside the library say nothing about which layer it was; a built-in model's
do). Capturing is a walk up a handful of frames, a
microsecond per node, and reading the line's text waits until someone asks.
"""

from __future__ import annotations

import linecache
import os
import sys
from typing import NamedTuple


class SourceLocation(NamedTuple):
    """A file and line that recorded a node (`file:line` when printed)."""

    filename: str
    line: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}"

    def text(self) -> str:
        """The source line itself, stripped ('' when the file cannot be read)."""
        return linecache.getline(self.filename, self.line).strip()


def _library_folder() -> str:
    # The same spelling (relative or absolute) the interpreter gives every module of
    # the library, since they were all imported from one path entry.
    here = os.path.dirname(os.path.dirname(_library_folder.__code__.co_filename))
    return os.path.join(here, "")


_LIBRARY = _library_folder()
#: Inside the library, the models and the built-in workloads are where expressions are
#: written, so they count as the user's code.
_MODEL_CODE = tuple(os.path.join(_LIBRARY, folder, "") for folder in ("models", "workloads"))
#: Folders of tools that drive the library (a grader's), whose frames are not the user's.
_TOOLS: list[str] = []


def count_as_machinery(folder: str) -> None:
    """Frames of files under `folder` are a tool's machinery, not the user's code: a
    tool that records or runs workloads (the `topos` command) names its own folder, so
    a source location points past it to where the expression was written."""
    entry = os.path.join(folder, "")
    if entry not in _TOOLS:
        _TOOLS.append(entry)


def _is_machinery(filename: str) -> bool:
    if filename.startswith(tuple(_TOOLS)):
        return True
    return filename.startswith(_LIBRARY) and not filename.startswith(_MODEL_CODE)


def user_location() -> SourceLocation | None:
    """The innermost calling frame that is the user's (or a built-in model's) code, not
    the library's or the grader's machinery, if any."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _is_machinery(filename):
            return SourceLocation(filename, frame.f_lineno)
        frame = frame.f_back
    return None

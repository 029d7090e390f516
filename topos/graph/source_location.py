"""SourceLocation: where a node was recorded — the first frame outside the library.

A wrong derivative rule is only useful to report if the user can find the
expression that recorded the node; the tape keeps the file and line of the
innermost caller outside `topos/` (a layer's own lines inside the library say
nothing about which layer it was). Capturing is a walk up a handful of frames, a
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


def user_location() -> SourceLocation | None:
    """The innermost calling frame whose file lies outside the library, if any."""
    frame = sys._getframe(1)
    library = _LIBRARY
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(library):
            return SourceLocation(filename, frame.f_lineno)
        frame = frame.f_back
    return None

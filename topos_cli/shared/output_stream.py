"""Standard output and error that can never fail a command.

What `topos` prints is a report of work already done: a grade must not end
with exit 1 and no `results:` line because its reader went away (`topos grade
| head -1`), nor crash on `±` or `Δ` because the terminal's encoding is ASCII
(`LC_ALL=C`, `PYTHONIOENCODING=ascii`). `OutputStream` wraps a text stream:
characters the encoding lacks are spelled in ASCII (`±` as `+/-`, `Δ` as
`delta`), and once the reader is gone (a broken pipe, a closed stream) what
follows is dropped quietly, the descriptor pointed at /dev/null so that the
interpreter's last flush does not complain either. `broken` says whether it
happened; the command's exit status is left to the command.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TextIO

#: How characters outside ASCII that topos prints are spelled where they cannot be encoded.
ASCII_SPELLINGS = {
    "±": "+/-",
    "Δ": "delta",
    "—": "-",
    "–": "-",
    "×": "x",
    "…": "...",
    "≈": "~",
    "→": "->",
    "▲": "^",
    "▼": "v",
    "≤": "<=",
    "≥": ">=",
    "µ": "u",
    "·": ".",
}
_TRANSLATION = str.maketrans(ASCII_SPELLINGS)


def use_plain_output(stream: TextIO | None = None) -> bool:
    """Whether to print plain text: `NO_COLOR` is set (non-empty), or `stream` is no terminal."""
    if os.environ.get("NO_COLOR"):
        return True
    stream = stream if stream is not None else sys.stdout
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):  # a closed or file-less stream is no terminal
        return True


def ascii_spelling(text: str, encoding: str = "ascii") -> str:
    """`text` with topos's own symbols spelled in ASCII, and anything else `encoding`
    lacks replaced by `?`."""
    spelled = text.translate(_TRANSLATION)
    return spelled.encode(encoding, errors="replace").decode(encoding, errors="replace")


def can_encode(text: str, stream: TextIO | None) -> bool:
    """Whether `stream` can write `text` as it is."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


class OutputStream:
    """A text stream (`sys.stdout` or `sys.stderr`) whose writes never raise.

    Deliberately not a file with a `buffer`: libraries that would reach past
    it to the bytes underneath (click does, for an ASCII stream) use it as is.
    """

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream
        self.broken = stream is None

    @property
    def encoding(self) -> str:
        """The underlying stream's encoding."""
        return getattr(self.stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:
        """How encoding errors are handled: spelled in ASCII, never raised."""
        return "replace"

    @property
    def closed(self) -> bool:
        """Never: a stream whose reader is gone swallows what is written."""
        return False

    def writable(self) -> bool:
        """Always."""
        return True

    def isatty(self) -> bool:
        """Whether the underlying stream is a terminal (never, once broken)."""
        if self.broken:
            return False
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError, OSError):
            return False

    def fileno(self) -> int:
        """The underlying descriptor; raises `OSError` where there is none."""
        if self.stream is None:
            raise OSError("standard stream is closed")
        return self.stream.fileno()

    def write(self, text: str) -> int:
        """Writes `text` (spelled in ASCII where the encoding needs it); never raises."""
        if not isinstance(text, str):
            # Not a binary stream: click probes with bytes to find out.
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.broken:
            return len(text)
        try:
            try:
                self.stream.write(text)
            except UnicodeEncodeError:
                self.stream.write(ascii_spelling(text, self.encoding))
        except (OSError, ValueError):
            self._give_up()
        return len(text)

    def flush(self) -> None:
        """Flushes; a reader that is gone is noted, not raised."""
        if self.broken:
            return
        try:
            self.stream.flush()
        except (OSError, ValueError):
            self._give_up()

    def _give_up(self) -> None:
        """The reader is gone: from now on output goes nowhere, even the buffered rest."""
        self.broken = True
        with contextlib.suppress(OSError, ValueError, AttributeError):
            # The text stream still holds what it could not write and will flush it at exit.
            descriptor = self.stream.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, descriptor)
            os.close(null)


def guard_standard_streams() -> None:
    """Makes `sys.stdout` and `sys.stderr` `OutputStream`s (once).

    A standard descriptor the process was started without (`topos grade >&-`)
    is pointed at /dev/null first: otherwise the next file opened would take
    its number, and whatever writes to "standard output" would write into it.
    """
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != descriptor:
                os.dup2(null, descriptor)
                os.close(null)
    if not isinstance(sys.stdout, OutputStream):
        sys.stdout = OutputStream(sys.stdout)  # type: ignore[assignment]
    if not isinstance(sys.stderr, OutputStream):
        sys.stderr = OutputStream(sys.stderr)  # type: ignore[assignment]

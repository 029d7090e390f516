"""DataError: a data file that is missing or malformed."""

from __future__ import annotations

from os import PathLike


class DataError(ValueError):
    """A data file that is missing or malformed.

    The message is one line: the file, a colon, and what is wrong with it.
    """

    def __init__(self, path: str | PathLike[str], problem: str) -> None:
        self.path = str(path)
        # One line, always: tools print it as is and grep it.
        self.problem = " ".join(problem.split())
        super().__init__(f"{self.path}: {self.problem}")

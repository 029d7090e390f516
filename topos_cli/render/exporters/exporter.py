"""The one interface every export format has."""

from __future__ import annotations

from typing import Protocol

from topos_cli.render.exporters.exported_grade import ExportedGrade


class Exporter(Protocol):
    """One format a grade can be exported in.

    `name` is the format's (`csv`), `option` the command's option that asks for it
    (`--export-csv`), `suffix` the file name's usual ending. `standard_output` says
    whether the option takes `-` (JSON only: its text is escaped for an ASCII stream).
    """

    name: str
    option: str
    suffix: str
    standard_output: bool

    def export(self, grade: ExportedGrade) -> str | None:
        """The file's text, or `None` when the format has nothing to write (no verdict)."""
        ...

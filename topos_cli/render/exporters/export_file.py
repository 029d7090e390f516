"""Writing an export: atomically (a reader sees the old file or the new one), or to
standard output where the format allows it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from topos.system.atomic_file import replace_atomically
from topos_cli.render.exporters.exported_grade import ExportedGrade
from topos_cli.render.exporters.exporter import Exporter
from topos_cli.result.result_file import ResultFileError, prepare_directory
from topos_cli.shared.output_stream import can_encode


def _ascii_json(text: str) -> str:
    """JSON text with every other character `\\u`-escaped: the same JSON (outside its
    strings JSON holds ASCII only), as `json.dumps(ensure_ascii=True)` writes it."""
    return "".join(
        character if character.isascii() else json.dumps(character)[1:-1] for character in text
    )


def write_export(exporter: Exporter, path: str | os.PathLike[str], grade: ExportedGrade) -> bool:
    """Writes `exporter`'s text of `grade` to `path` (`-`: standard output, where the
    exporter allows it); returns whether it wrote anything (not without a verdict). A file
    that cannot be written raises `ResultFileError`, one line naming it."""
    text = exporter.export(grade)
    if text is None:
        return False
    if str(path) == "-" and exporter.standard_output:
        if not can_encode(text, sys.stdout):
            text = _ascii_json(text)
        sys.stdout.write(text)
        sys.stdout.flush()
        return True
    # A symbolic link is written through: its target is replaced, the link is kept.
    target = Path(os.path.realpath(path))
    prepare_directory(target)
    data = text.encode("utf-8")
    try:
        replace_atomically(target, lambda handle: handle.write(data))
    except OSError as error:
        raise ResultFileError(f"cannot write {target}: {error.strerror or error}") from None
    return True

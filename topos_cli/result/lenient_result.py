"""Reading a result file for pictures: what there is, and a note for what is not.

`load_result` refuses anything but a well-formed result of this schema, because a
comparison built on half a file would be wrong. A picture can do with less: a result of
another topos schema, or one whose parts are unreadable (a run of an older topos, a host
written by hand). `read_result_leniently` reads the result part by part, keeps every part
that reads as its record, and says in `LenientResult.missing` what it left out. The file
itself is bounded as `load_result` bounds it, and a file that is no topos result at all
(not JSON, not an object, no `topos.grade/` schema) is refused (`ResultFileError`, exit 2).
A result is written atomically, so a file cut short is not a result: it is refused too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import msgspec

from topos_cli.result.grade_result import SCHEMA, GradeResult
from topos_cli.result.repeat import Repeat
from topos_cli.result.result_file import decode_json, read_result_bytes, result_schema
from topos_cli.result.result_part import decode_other


@dataclass
class LenientResult:
    """A result as far as it could be read, and what is missing from it, in words."""

    result: GradeResult
    source: str
    missing: list[str] = field(default_factory=list)


def interpret_result(data: Any, source: str, missing: list[str] | None = None) -> LenientResult:
    """A decoded JSON value as a `LenientResult`; raises `ResultFileError` if it is no topos
    result at all (not an object, or without a `topos.grade/` schema)."""
    missing = list(missing or [])
    schema = result_schema(data, source)
    if schema != SCHEMA:
        missing.append(
            f"the result has schema {schema[:40]}; this topos reads {SCHEMA}, so some "
            f"parts may be missing or misread"
        )
    kept: dict[str, Any] = {"schema": SCHEMA}
    for name in GradeResult.__struct_fields__:
        if name in ("schema", "repeats") or name not in data:
            continue
        value = data[name]
        try:
            # The part alone, beside the two fields a result cannot do without.
            probe = {"workload": {"name": "-"}, "steps": 0, name: value}
            msgspec.convert(probe, GradeResult, dec_hook=decode_other)
        except (msgspec.ValidationError, RecursionError) as error:
            if name == "workload":
                missing.append("the workload is not named")
            else:
                missing.append(f"its {name} is unreadable and left out ({_short(error)})")
            continue
        kept[name] = value
    kept.setdefault("workload", {"name": "unknown workload"})
    kept.setdefault("steps", 0)
    result = msgspec.convert(kept, GradeResult, dec_hook=decode_other)
    readable = []
    repeats = data.get("repeats")
    if not isinstance(repeats, list):
        missing.append("no runs: the result holds no list of repeats")
        repeats = []
    for index, repeat in enumerate(repeats):
        try:
            readable.append(Repeat.from_json(repeat))
        except (msgspec.ValidationError, ValueError, RecursionError) as error:
            missing.append(f"run {index} is unreadable and left out ({_short(error)})")
    result = msgspec.structs.replace(result, repeats=readable)
    return LenientResult(result=result, source=source, missing=missing)


def _short(error: BaseException) -> str:
    """An error's message on one line, shortened."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def read_result_leniently(path: str | os.PathLike[str]) -> LenientResult:
    """Reads a result file for pictures; raises `ResultFileError` (exit 2, one line) only when
    the file cannot be read or is no topos result."""
    raw, source = read_result_bytes(path)
    return interpret_result(decode_json(raw, source), source)

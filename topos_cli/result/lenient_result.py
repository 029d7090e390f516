"""Reading a result file for pictures: what there is, and a note for what is not.

`load_result` refuses anything but a well-formed result of this schema,
because a comparison built on half a file would be wrong. A picture can do
with less: a result of another topos schema, one cut short by a full disk or
a killed copy, one whose runs lack a timeline. `read_result_leniently` keeps
what can be read and says, in `LenientResult.missing`, what could not. Only
a file that is no topos result at all is refused (`ResultFileError`, exit 2).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from topos_cli.result.result_file import (
    LARGEST_RESULT_BYTES,
    SCHEMA,
    read_regular_file,
    result_schema,
)
from topos_cli.shared.errors import ResultFileError

#: How many cut points `salvage_truncated_json` tries before it gives up on a file.
SALVAGE_ATTEMPTS = 200

_CLOSERS = {"{": "}", "[": "]"}


@dataclass
class LenientResult:
    """A result as far as it could be read, and what is missing from it, in words."""

    data: dict[str, Any]
    source: str
    missing: list[str] = field(default_factory=list)


def salvage_truncated_json(text: str) -> Any | None:
    """The longest prefix of `text` that parses once its open brackets are closed, or `None`.

    A result file is one JSON object written front to back, so a file cut
    short holds a valid prefix: every value up to the last comma outside a
    string is whole. The prefix is cut at one of the last commas (tried from
    the end) and closed with the brackets still open there.
    """
    stack: list[str] = []
    cut_points: list[tuple[int, str]] = []
    in_string = escaped = False
    for index, character in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif character == "\\":
                escaped = True
            elif character == '"':
                in_string = False
        elif character == '"':
            in_string = True
        elif character in _CLOSERS:
            stack.append(_CLOSERS[character])
        elif character in "}]":
            if stack:
                stack.pop()
        elif character == ",":
            cut_points.append((index, "".join(reversed(stack))))
            # Only the last cut points are ever tried; keep memory bounded on big files.
            if len(cut_points) > 4 * SALVAGE_ATTEMPTS:
                del cut_points[: 2 * SALVAGE_ATTEMPTS]
    for index, closers in reversed(cut_points[-SALVAGE_ATTEMPTS:]):
        try:
            return json.loads(text[:index] + closers)
        except json.JSONDecodeError:
            continue
    return None


def _decode(raw: bytes, source: str) -> tuple[Any, list[str]]:
    """The JSON value in `raw` (salvaged if cut short), and a note when it was salvaged."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ResultFileError(f"{source} is not a topos result (not UTF-8 text)") from None
    try:
        return json.loads(text), []
    except json.JSONDecodeError as error:
        salvaged = salvage_truncated_json(text) if text.lstrip().startswith("{") else None
        if not isinstance(salvaged, dict):
            raise ResultFileError(
                f"{source} is not a topos result (not JSON: {error.msg} at line {error.lineno}, "
                f"column {error.colno})"
            ) from None
        note = (
            f"the file is truncated (not JSON: {error.msg} at line {error.lineno}); "
            f"drawn from the part that could be read"
        )
        return salvaged, [note]


def _readable_runs(data: Mapping[str, Any], missing: list[str]) -> list[dict[str, Any]]:
    """The runs a picture can use: objects with a route, a repeat index and a status."""
    from topos_cli.result.run_record import RunRecord

    repeats = data.get("repeats")
    if not isinstance(repeats, list):
        missing.append("no runs: the result holds no list of repeats")
        return []
    kept = []
    for index, repeat in enumerate(repeats):
        try:
            RunRecord.from_dict(repeat)
        except ValueError as error:
            missing.append(f"run {index} is unreadable and left out ({error})")
            continue
        kept.append(repeat)
    return kept


def interpret_result(data: Any, source: str, missing: list[str] | None = None) -> LenientResult:
    """A decoded JSON value as a `LenientResult`; raises `ResultFileError` if it is no topos
    result at all (not an object, or without a `topos.grade/` schema)."""
    missing = list(missing or [])
    schema = result_schema(data, source)
    if schema != SCHEMA:
        missing.append(
            f"the result has schema {schema}; this topos reads {SCHEMA}, so some "
            f"parts may be missing or misread"
        )
    data = dict(data)
    workload = data.get("workload")
    if not isinstance(workload, dict) or not isinstance(workload.get("name"), str):
        missing.append("the workload is not named")
        data["workload"] = {
            "name": "unknown workload",
            **(workload if isinstance(workload, dict) else {}),
        }
    for key in ("host", "settings", "verdict", "routes"):
        if key in data and data[key] is not None and not isinstance(data[key], dict):
            missing.append(f"its {key} is unreadable and left out")
            data[key] = None
    data["repeats"] = _readable_runs(data, missing)
    return LenientResult(data=data, source=source, missing=missing)


def read_result_leniently(path: str | os.PathLike[str]) -> LenientResult:
    """Reads a result file for pictures; raises `ResultFileError` (exit 2, one line) only when
    the file cannot be read or is no topos result."""
    source = str(path)
    try:
        raw = read_regular_file(path)
    except FileNotFoundError:
        raise ResultFileError(f"{source}: no such file") from None
    except OSError as error:
        raise ResultFileError(f"cannot read {source}: {error.strerror or error}") from None
    if len(raw) > LARGEST_RESULT_BYTES:
        raise ResultFileError(
            f"{source} is not a topos result (larger than "
            f"{LARGEST_RESULT_BYTES // (1024 * 1024)} MiB)"
        )
    data, notes = _decode(raw, source)
    return interpret_result(data, source, notes)

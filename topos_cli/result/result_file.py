"""The result file of `topos grade`: how it is written, read and exported.

A result is one JSON object whose every field `topos_cli.result.grade_result` names
(`GradeResult`). The raw repeats are authoritative: a verdict or a comparison can always
be recomputed from them. Every write is atomic (a temporary file in the same directory,
flushed to disk, then renamed over the target), so a kill at any moment leaves the old
file or the new one, never half of one. A read is bounded (size, nesting, every number's
type and range) and refuses anything else in one line (`ResultFileError`, exit 2).
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

import msgspec

from topos.system import regular_file
from topos.system.atomic_file import replace_atomically
from topos_cli.result.grade_result import (
    SCHEMA,
    SCHEMA_FAMILY,
    GradeResult,
    GradeSettings,
    HostFacts,
    JudgedVerdict,
    Tool,
    WorkloadFacts,
)
from topos_cli.result.repeat import Repeat
from topos_cli.result.result_part import R, ResultPart
from topos_cli.shared.errors import ResultFileError
from topos_cli.shared.output_stream import can_encode

#: Where results go when the user names no path.
DEFAULT_DIRECTORY = Path("results")


class Judgement(Protocol):
    """What a result keeps of a verdict: its typed record (the judge's `Verdict`)."""

    def record(self) -> JudgedVerdict:
        """The verdict as the result file holds it."""


def utc_timestamp(moment: datetime | None = None) -> str:
    """An ISO 8601 UTC timestamp to the second, e.g. `2026-08-14T10:15:00Z`."""
    moment = (moment or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def default_result_path(
    workload: str,
    moment: datetime | None = None,
    directory: Path = DEFAULT_DIRECTORY,
    command: str = "grade",
) -> Path:
    """`results/<command>-<workload>-<UTC timestamp>.json`, e.g.
    `grade-cifar10-20260814T101500Z.json` (`frontier-...` for a frontier).

    The workload's name is reduced to characters safe in a file name, since
    a user's own workload may be named after a module path.
    """
    moment = (moment or datetime.now(timezone.utc)).astimezone(timezone.utc)
    safe_name = re.sub(r"[^A-Za-z0-9._-]+", "-", workload).strip("-.") or "workload"
    return directory / f"{command}-{safe_name}-{moment.strftime('%Y%m%dT%H%M%SZ')}.json"


def default_report_path(result_path: str | os.PathLike[str]) -> Path:
    """Where a result's report goes by default: beside it, `.json` replaced by `.html`."""
    path = Path(result_path)
    return path.with_suffix(".html") if path.suffix == ".json" else Path(f"{path}.html")


def _tool_version() -> str:
    """The installed version of topos, or `unknown` when it runs from an uninstalled tree."""
    from importlib import metadata

    try:
        return metadata.version("topos")
    except metadata.PackageNotFoundError:
        return "unknown"


def compose_result(
    *,
    workload: WorkloadFacts | Mapping[str, Any],
    host: HostFacts | Mapping[str, Any],
    steps: int,
    repeats: Sequence[Repeat],
    verdict: Judgement | None,
    settings: GradeSettings | Mapping[str, Any] | None = None,
    created: datetime | None = None,
) -> GradeResult:
    """Assembles a result; `verdict` is `None` for a grade interrupted before any run (still
    a valid result). Mappings are read as their records (checked: a wrong field raises
    `ValueError` naming it)."""
    return GradeResult(
        created=utc_timestamp(created),
        tool=Tool(name="topos", version=_tool_version()),
        host=_as(HostFacts, host),
        workload=_as(WorkloadFacts, workload),
        steps=steps,
        settings=_as(GradeSettings, settings or {}),
        repeats=list(repeats),
        verdict=None if verdict is None else verdict.record(),
    )


def _as(kind: type[R], value: R | Mapping[str, Any]) -> R:
    """`value` as a `kind` record: itself, or read from its mapping."""
    return value if isinstance(value, kind) else kind.from_json(json_safe(dict(value)))


def json_safe(value: Any) -> Any:
    """`value` with tuples as lists and non-finite floats as `"nan"`, `"inf"`, `"-inf"`.

    Strict JSON has no NaN or infinity, and a result must never be lost to
    a serialisation error after a long grade, so they become strings.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Mapping):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value


def dumps(data: Any, ensure_ascii: bool = False) -> str:
    """The strict-JSON text topos writes: indented, UTF-8 (or ASCII with `\\u` escapes,
    the same JSON), ending in a newline."""
    if isinstance(data, ResultPart):
        data = data.to_json()
    text = json.dumps(json_safe(data), indent=2, ensure_ascii=ensure_ascii, allow_nan=False)
    return text + "\n"


def prepare_directory(target: Path) -> Path:
    """Creates the folder `target` goes in, if missing; raises `ResultFileError` if it cannot.

    `mkdir` on a path through a regular file says only "File exists", so the
    file in the way is found and named instead.
    """
    directory = target.parent
    for ancestor in (directory, *directory.parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                raise ResultFileError(f"cannot write {target}: {ancestor} is not a directory")
            break
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ResultFileError(f"cannot write {target}: {error.strerror or error}") from None
    return directory


def write_atomically(path: str | os.PathLike[str], data: Any) -> None:
    """Writes `data` as JSON to `path` atomically; `-` writes to standard output.

    The text is serialised before any file is touched, then written to a
    temporary file beside the target (the same file system, so the rename
    is atomic), flushed and fsynced, and renamed over the target. On any
    failure, even an interrupt, the temporary file is removed and the old
    file is left as it was. Raises `ResultFileError` (one line) when the
    file cannot be written.
    """
    text = dumps(data)
    if str(path) == "-":
        if not can_encode(text, sys.stdout):
            # An ASCII terminal or pipe: the same JSON, its other characters escaped.
            text = dumps(data, ensure_ascii=True)
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    # A symbolic link is written through: its target is replaced, the link is kept.
    target = Path(os.path.realpath(path))
    prepare_directory(target)
    try:
        replace_atomically(target, lambda handle: handle.write(text.encode("utf-8")))
    except OSError as error:
        raise ResultFileError(f"cannot write {target}: {error.strerror or error}") from None


#: How deep a result's JSON may nest: a real one nests less than ten deep.
DEEPEST_NESTING = 64


def result_schema(data: Any, source: str = "the result") -> str:
    """The schema of `data`, a topos result of some version; raises `ResultFileError` if
    it is no topos result at all (not an object, or without a `topos.grade/` schema)."""
    if not isinstance(data, dict):
        kind = "an array" if isinstance(data, list) else f"a {type(data).__name__}"
        raise ResultFileError(f"{source} is not a topos result (it holds {kind}, not an object)")
    schema = data.get("schema")
    if not isinstance(schema, str) or not schema.startswith(SCHEMA_FAMILY):
        found = "no schema" if schema is None else f"schema {_shown(schema)}"
        raise ResultFileError(f"{source} is not a topos result ({found})")
    return schema


def _shown(value: Any) -> str:
    """A value from a file, shortened for a one-line message."""
    text = repr(value) if isinstance(value, str) else type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def read_result(data: Any, source: str = "the result") -> GradeResult:
    """`data` (decoded JSON) as a `GradeResult` of this schema; raises `ResultFileError`
    naming `source` and the first field that is wrong."""
    schema = result_schema(data, source)
    if schema != SCHEMA:
        raise ResultFileError(f"{source} has schema {schema[:60]}; this topos reads {SCHEMA}")
    try:
        return GradeResult.from_json(data)
    except (msgspec.ValidationError, ValueError, RecursionError) as error:
        raise ResultFileError(f"{source} is a malformed topos result: {_one_line(error)}") from None


def _one_line(error: BaseException) -> str:
    """An error's message on one line, shortened."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def decode_json(raw: bytes, source: str) -> Any:
    """The JSON value in `raw`, bounded: UTF-8, strict JSON (no NaN), nesting at most
    `DEEPEST_NESTING` deep, integers of at most 19 digits and floats in range; raises
    `ResultFileError` in one line otherwise."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ResultFileError(f"{source} is not a topos result (not UTF-8 text)") from None
    try:
        data = msgspec.json.decode(raw)
    except RecursionError:
        raise ResultFileError(f"{source} is not a topos result (nested too deeply)") from None
    except msgspec.ValidationError as error:  # a number past what a result can hold
        reason = str(error).split(" - at ", 1)[0].lower()
        raise ResultFileError(f"{source} is not a topos result ({reason})") from None
    except msgspec.DecodeError as error:
        where = _position(text, error)
        raise ResultFileError(f"{source} is not a topos result (not JSON{where})") from None
    problem = _unbounded(data, 0)
    if problem is not None:
        raise ResultFileError(f"{source} is not a topos result ({problem})")
    return data


def _position(text: str, error: msgspec.DecodeError) -> str:
    """`: <what> at line L, column C` from msgspec's `(byte N)`, when it says one."""
    message = str(error)
    found = re.search(r"\(byte (\d+)\)", message)
    what = message.split(" (byte", 1)[0].removeprefix("JSON is malformed: ")
    if found is None:
        return f": {what}"
    offset = min(int(found.group(1)), len(text))
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f": {what} at line {line}, column {column}"


def _unbounded(value: Any, depth: int) -> str | None:
    """What in `value` is past the bounds a result keeps to, or None; iterative, so a
    deep value cannot exhaust the stack here."""
    pending = [(value, depth)]
    while pending:
        item, level = pending.pop()
        if level > DEEPEST_NESTING:
            return f"nested more than {DEEPEST_NESTING} deep"
        if isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        if isinstance(item, int):
            if not -(2**63) <= item < 2**64:
                return "an integer has too many digits"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "a number is out of range"
        elif isinstance(item, dict):
            pending.extend((child, level + 1) for child in item.values())
        elif isinstance(item, list):
            pending.extend((child, level + 1) for child in item)
    return None


#: The largest result file topos reads: a grade of thousands of steps and repeats is a few
#: MiB; anything past this is not a result, and must not be read into memory whole.
LARGEST_RESULT_BYTES = 64 * 1024 * 1024


def _read_capped(stream: Any) -> bytes | None:
    """At most one byte more than `LARGEST_RESULT_BYTES` from a binary stream."""
    return None if stream is None else regular_file.read_at_most(stream, LARGEST_RESULT_BYTES)


def read_regular_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the regular file at `path`, read with a cap; raises `ResultFileError`
    for anything else (a FIFO, a device such as /dev/zero, a directory, a socket), and
    `OSError` when it cannot be read."""
    try:
        with regular_file.open_regular_file(path) as handle:
            return regular_file.read_at_most(handle, LARGEST_RESULT_BYTES)
    except regular_file.NotRegularFileError as error:
        kind = error.kind if error.kind == "a directory" else "not a regular file"
        raise ResultFileError(f"{path} is {kind}; a result is a regular file") from None


def read_result_bytes(path: str | os.PathLike[str]) -> tuple[bytes, str]:
    """The bytes of a result file (`-`: standard input) and the name to call it by, read
    with a cap; raises `ResultFileError` in one line."""
    source = str(path)
    try:
        if source == "-":
            source = "standard input"
            raw = _read_capped(sys.stdin.buffer if hasattr(sys.stdin, "buffer") else None)
        else:
            raw = read_regular_file(path)
    except FileNotFoundError:
        raise ResultFileError(f"{source}: no such file") from None
    except OSError as error:
        raise ResultFileError(f"cannot read {source}: {error.strerror or error}") from None
    if raw is None:
        raise ResultFileError(f"{source} is not a topos result (nothing to read)")
    if len(raw) > LARGEST_RESULT_BYTES:
        raise ResultFileError(
            f"{source} is not a topos result (larger than "
            f"{LARGEST_RESULT_BYTES // (1024 * 1024)} MiB)"
        )
    return raw, source


def load_result(path: str | os.PathLike[str]) -> GradeResult:
    """Reads and checks a result file (`-` reads standard input); one-line errors.

    Raises `ResultFileError` when the file is missing, unreadable, not JSON,
    not a topos result, of another schema, or malformed.
    """
    raw, source = read_result_bytes(path)
    return read_result(decode_json(raw, source), source)

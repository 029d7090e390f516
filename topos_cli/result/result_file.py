"""The result file of `topos grade`: its schema, how it is written, read and exported.

A result is one JSON object:

    {
      "schema": "topos.grade/1",
      "created": "2026-08-14T10:15:00Z",
      "tool": {"name": "topos", "version": "0.1.0"},
      "host": {...},                   # host.host_facts(), plus what the workers add
      "workload": {"name": "cifar10", ...},   # data source and fingerprint, ...
      "steps": 300,
      "settings": {...},               # routes, repeat, threads, environment, timeout
      "repeats": [RunRecord.to_dict(), ...],   # raw: per-step times, loss bits
      "verdict": Verdict.to_json()
    }

The raw repeats are authoritative: a verdict or a comparison can always be
recomputed from them. Every write is atomic (a temporary file in the same
directory, flushed to disk, then renamed over the target), so a kill at any
moment leaves the old file or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import secrets
import stat
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from topos_cli.result.run_record import RunRecord
from topos_cli.shared.errors import ResultFileError
from topos_cli.shared.output_stream import can_encode

#: The schema this topos writes and reads. A change that breaks readers bumps the number.
SCHEMA = "topos.grade/1"

#: What every topos result schema starts with, to tell "another schema" from "not ours".
SCHEMA_FAMILY = "topos.grade/"

#: Where results go when the user names no path.
DEFAULT_DIRECTORY = Path("results")


class JudgedVerdict(Protocol):
    """What a result keeps of a verdict: its JSON form (the report's `Verdict`)."""

    def to_json(self) -> dict[str, Any]:
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
    workload: Mapping[str, Any],
    host: Mapping[str, Any],
    steps: int,
    repeats: Sequence[RunRecord],
    verdict: JudgedVerdict | None,
    settings: Mapping[str, Any] | None = None,
    created: datetime | None = None,
) -> dict[str, Any]:
    """Assembles a result object in the module docstring's shape; `workload` must have a name.

    `verdict` is `None` for a grade interrupted before any run: still a valid record.
    """
    if not isinstance(workload.get("name"), str):
        raise ValueError("a result's workload needs a name")
    return {
        "schema": SCHEMA,
        "created": utc_timestamp(created),
        "tool": {"name": "topos", "version": _tool_version()},
        "host": dict(host),
        "workload": dict(workload),
        "steps": steps,
        "settings": dict(settings or {}),
        "repeats": [repeat.to_dict() for repeat in repeats],
        "verdict": None if verdict is None else verdict.to_json(),
    }


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
    text = json.dumps(json_safe(data), indent=2, ensure_ascii=ensure_ascii, allow_nan=False)
    return text + "\n"


def _fsync_directory(directory: Path) -> None:
    """Flushes a directory's entries, so the rename itself survives a power cut (best effort)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # not every platform opens directories; the rename is still atomic
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _prepare_directory(target: Path) -> Path:
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
    directory = _prepare_directory(target)
    temporary = directory / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        # os.open with 0o666 lets the umask decide the mode, as for any new file
        # (a NamedTemporaryFile would leave the result readable by its owner only).
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException as error:
        with contextlib.suppress(OSError):
            temporary.unlink()
        if isinstance(error, OSError):
            raise ResultFileError(f"cannot write {target}: {error.strerror or error}") from None
        raise
    _fsync_directory(directory)


def result_schema(data: Any, source: str = "the result") -> str:
    """The schema of `data`, a topos result of some version; raises `ResultFileError` if
    it is no topos result at all (not an object, or without a `topos.grade/` schema)."""
    if not isinstance(data, dict):
        kind = "an array" if isinstance(data, list) else f"a {type(data).__name__}"
        raise ResultFileError(f"{source} is not a topos result (it holds {kind}, not an object)")
    schema = data.get("schema")
    if not isinstance(schema, str) or not schema.startswith(SCHEMA_FAMILY):
        found = "no schema" if schema is None else f"schema {schema!r}"
        raise ResultFileError(f"{source} is not a topos result ({found})")
    return schema


def validate_result(data: Any, source: str = "the result") -> dict[str, Any]:
    """Returns `data` if it is a topos result of this schema; else raises `ResultFileError`.

    Every message is one line naming `source` and what is wrong with it.
    """
    schema = result_schema(data, source)
    if schema != SCHEMA:
        raise ResultFileError(f"{source} has schema {schema}; this topos reads {SCHEMA}")
    workload = data.get("workload")
    if not isinstance(workload, dict) or not isinstance(workload.get("name"), str):
        raise ResultFileError(f"{source} is a malformed topos result: its workload has no name")
    steps = data.get("steps")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ResultFileError(f"{source} is a malformed topos result: steps is {steps!r}")
    repeats = data.get("repeats")
    if not isinstance(repeats, list):
        raise ResultFileError(f"{source} is a malformed topos result: it has no list of repeats")
    for index, repeat in enumerate(repeats):
        try:
            RunRecord.from_dict(repeat)
        except ValueError as error:
            raise ResultFileError(
                f"{source} is a malformed topos result: repeat {index}: {error}"
            ) from None
    # Every part a comparison reads is checked now, before any work, so that a result
    # which passes here cannot fail a grade (or a comparison) at its end.
    for key in ("host", "settings", "verdict"):
        if key in data and not isinstance(data[key], dict):
            raise ResultFileError(
                f"{source} is a malformed topos result: its {key} is not an object"
            )
    verdict_settings = data.get("verdict", {}).get("settings", {})
    if not isinstance(verdict_settings, dict):
        raise ResultFileError(
            f"{source} is a malformed topos result: its verdict's settings is not an object"
        )
    return data


def read_repeats(result: Mapping[str, Any]) -> list[RunRecord]:
    """The runs of a validated result, as `RunRecord`s."""
    return [RunRecord.from_dict(repeat) for repeat in result["repeats"]]


#: The largest result file topos reads: a grade of thousands of steps and repeats is a few
#: MiB; anything past this is not a result, and must not be read into memory whole.
LARGEST_RESULT_BYTES = 64 * 1024 * 1024


def _read_capped(stream: Any) -> bytes | None:
    """At most one byte more than `LARGEST_RESULT_BYTES` from a binary stream."""
    if stream is None:
        return None
    chunks, size = [], 0
    while size <= LARGEST_RESULT_BYTES:
        chunk = stream.read(min(1024 * 1024, LARGEST_RESULT_BYTES + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_regular_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the regular file at `path`, read with a cap; raises `ResultFileError`
    for anything else (a FIFO, a device such as /dev/zero, a directory, a socket).

    Opened without blocking, so a FIFO with no writer cannot hold the command,
    and checked before a byte is read: an endless file is never read at all.
    """
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        facts = os.fstat(descriptor)
        if not stat.S_ISREG(facts.st_mode):
            kind = "a directory" if stat.S_ISDIR(facts.st_mode) else "not a regular file"
            raise ResultFileError(f"{path} is {kind}; a result is a regular file")
        # Back to blocking reads: a regular file never blocks, and this avoids EAGAIN oddities.
        os.set_blocking(descriptor, True)
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            return _read_capped(handle) or b""
    finally:
        os.close(descriptor)


def load_result(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Reads and validates a result file (`-` reads standard input); one-line errors.

    Raises `ResultFileError` when the file is missing, unreadable, not JSON,
    not a topos result, of another schema, or malformed.
    """
    source = str(path)
    try:
        if source == "-":
            source = "standard input"
            raw = _read_capped(sys.stdin.buffer if hasattr(sys.stdin, "buffer") else None)
        else:
            raw = read_regular_file(path)
        if raw is None:
            raise ResultFileError(f"{source} is not a topos result (nothing to read)")
        if len(raw) > LARGEST_RESULT_BYTES:
            raise ResultFileError(
                f"{source} is not a topos result (larger than "
                f"{LARGEST_RESULT_BYTES // (1024 * 1024)} MiB)"
            )
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise ResultFileError(f"{source}: no such file") from None
    except UnicodeDecodeError:
        raise ResultFileError(f"{source} is not a topos result (not UTF-8 text)") from None
    except OSError as error:
        raise ResultFileError(f"cannot read {source}: {error.strerror or error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ResultFileError(
            f"{source} is not a topos result (not JSON: {error.msg} at line {error.lineno}, "
            f"column {error.colno})"
        ) from None
    return validate_result(data, source)


def github_benchmark_entries(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The entries github-action-benchmark's `customSmallerIsBetter` tool reads.

    Per route: the median ms/step (range: half the IQR), and the peak RSS
    and training delta in bytes (range: half the spread across repeats).
    Names are `<workload> <route>: <figure>`, stable across runs so the
    action can chart them.
    """
    workload = result["workload"]["name"]
    entries: list[dict[str, Any]] = []
    for route in result.get("verdict", {}).get("routes", []):
        name = route["route"]
        repeats = f"{route['completed']} of {route['repeats']} repeats completed"
        speed = route.get("speed")
        if speed is not None:
            steps = speed["milliseconds_per_step"]
            first = speed.get("first_step_milliseconds")
            first_text = "" if first is None else f"; first step {first:.3f} ms"
            entries.append(
                {
                    "name": f"{workload} {name}: time per step",
                    "unit": "ms/step",
                    "value": steps["median"],
                    "range": f"± {steps['interquartile_range'] / 2:.3f}",
                    "extra": (
                        f"median of {steps['count']} steps; IQR {steps['lower_quartile']:.3f} "
                        f"to {steps['upper_quartile']:.3f} ms; {repeats}{first_text}"
                    ),
                }
            )
        memory = route.get("memory")
        if memory is None:
            continue
        for figure, key, range_key in (
            ("peak RSS", "peak_rss_bytes", "peak_rss_range"),
            ("training delta", "training_delta_bytes", "training_delta_range"),
        ):
            if memory.get(key) is None:
                continue
            low, high = memory.get(range_key) or (memory[key], memory[key])
            entries.append(
                {
                    "name": f"{workload} {name}: {figure}",
                    "unit": "bytes",
                    "value": memory[key],
                    "range": f"± {(high - low) / 2:.0f}",
                    "extra": f"median over repeats; from {low} to {high} bytes; {repeats}",
                }
            )
    return entries


def write_github_benchmark(path: str | os.PathLike[str], result: Mapping[str, Any]) -> None:
    """Writes `github_benchmark_entries(result)` atomically to `path` (`-` for stdout)."""
    write_atomically(path, github_benchmark_entries(result))

"""Where a grade's result goes: checked before any work, and never lost or clobbered at the end.

- *Before any work* (`check_destination`): a path that is a directory, a
  device, a FIFO or a socket is refused, as is one under a file or under a
  folder this user cannot write; nothing is created (a usage error leaves no
  folder behind). A symbolic link is written through: its target is replaced,
  the link stays.
- *A default name never collides*: `results/grade-<workload>-<timestamp>.json`
  is claimed exclusively when written (a hard link of the finished file, or
  an `O_EXCL` create), and two grades of the same second get `-2`, `-3`, ...
- *An explicit `--json PATH`* replaces what is there, except that a lesser
  result never replaces a complete one: when PATH holds a topos result that
  completed (every run ran; exit status 0, 3 or 4) and the new grade did not
  (a usage or data error, an interrupt, a route that failed), the new result
  goes beside it as `<stem>.<error|interrupted|failed>.json` and the old one
  is kept.
- *When the file cannot be written at the end* (the folder became
  unwritable, the disk is full), the result is saved in the first of the
  temporary directory, the working directory and the home directory that
  takes it, and the caller says where.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topos_cli.result.grade_result import GradeResult
from topos_cli.result.result_file import dumps, load_result, write_atomically
from topos_cli.shared.errors import ResultFileError
from topos_cli.shared.output_path import check_distinct, check_output, written_path

__all__ = [
    "COMPLETE_EXIT_STATUSES",
    "Saved",
    "check_destination",
    "check_distinct",
    "incomplete_kind",
    "is_complete",
    "last_resort_text",
    "save_result",
    "write_exclusively",
    "written_path",
]

#: The exit statuses of a grade in which every run ran: its result may replace another.
COMPLETE_EXIT_STATUSES = (0, 3, 4)

#: How many numbered names a default or side-by-side result tries before giving up.
_MOST_NUMBERED_NAMES = 1000


def check_destination(path: str, option: str = "--json") -> None:
    """Raises `ToposUsageError` now if a result could not be written to `path` later
    (`-` is standard output); the guard every output has (`topos_cli.shared.output_path`).

    Creates nothing: the folders are made when the result is written.
    """
    check_output(path, option, standard_output=True)


def is_complete(result: GradeResult) -> bool:
    """Whether a result is of a grade in which every run ran (see the module docstring)."""
    return result.status == "complete" and result.exit_status in COMPLETE_EXIT_STATUSES


def incomplete_kind(result: GradeResult) -> str:
    """What a result that is not complete is: `error`, `interrupted` or `failed` (every run
    ran but a route failed: its status field still says `complete`). The one word used for
    the file beside a kept result and in the message that says so."""
    return result.status if result.status in ("error", "interrupted") else "failed"


def _holds_complete_result(path: Path) -> bool:
    """Whether `path` holds a complete topos result (anything unreadable is not one)."""
    try:
        return is_complete(load_result(path))
    except ResultFileError:
        return False


def _numbered(path: Path, number: int) -> Path:
    """`grade-x.json`, then `grade-x-2.json`, `grade-x-3.json`, ..."""
    return path if number == 1 else path.with_name(f"{path.stem}-{number}{path.suffix}")


def write_exclusively(path: Path, data: Any) -> Path:
    """Writes `data` as JSON to `path`, or to the first free numbered name beside it, never
    replacing a file; returns the path written. Raises `ResultFileError`."""
    directory = path.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
        temporary = directory / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        write_atomically(temporary, data)
    except ResultFileError as error:
        # The message names the file asked for, never the hidden temporary beside it
        # (`cannot write results/.grade-x.json.123.tmp: No space left on device`).
        cause = error.__context__
        reason = (
            cause.strerror
            if isinstance(cause, OSError) and cause.strerror
            else str(error).rpartition(": ")[2]
        )
        raise ResultFileError(f"cannot write {path}: {reason}") from None
    except OSError as error:
        raise ResultFileError(f"cannot write {path}: {error.strerror or error}") from None
    try:
        for number in range(1, _MOST_NUMBERED_NAMES + 1):
            candidate = _numbered(path, number)
            try:
                # A hard link is created whole or not at all, and never over a file.
                os.link(temporary, candidate)
                return candidate
            except FileExistsError:
                continue
            except OSError as error:
                if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                    raise ResultFileError(
                        f"cannot write {candidate}: {error.strerror or error}"
                    ) from None
            # A file system without hard links: claim the name, then fill it by rename.
            try:
                os.close(os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            except FileExistsError:
                continue
            except OSError as error:
                raise ResultFileError(f"cannot write {candidate}: {error.strerror}") from None
            os.replace(temporary, candidate)
            return candidate
        raise ResultFileError(f"cannot write {path}: every numbered name beside it is taken")
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()


@dataclass(frozen=True)
class Saved:
    """Where a result was written, and what the caller should say about it."""

    #: The file written (`-` for standard output), or `None` if nowhere would take it.
    path: str | None
    #: Why it is not where it was asked to go (a one-line error), if it is not.
    error: str | None = None
    #: A complete result that was kept rather than replaced by a lesser one.
    kept: str | None = None


def _fall_back(data: Any, name: str) -> str | None:
    """Saves `data` in the first of the temporary, working and home directories that takes it."""
    for directory in (tempfile.gettempdir(), os.getcwd(), os.path.expanduser("~")):
        with contextlib.suppress(ResultFileError, OSError):
            return str(write_exclusively(Path(directory) / name, data))
    return None


def save_result(
    path: str, result: GradeResult, *, default: bool, replace_own: str | None = None
) -> Saved:
    """Writes a grade's result to `path` as the module docstring says, or somewhere that takes it.

    `default` says `path` is the default name (which must not collide);
    `replace_own` is a file this grade wrote already, which it may replace.
    """
    if path == "-":
        write_atomically("-", result)
        return Saved("-")
    try:
        if replace_own is not None:
            write_atomically(replace_own, result)
            return Saved(replace_own)
        if default:
            return Saved(str(write_exclusively(Path(path), result)))
        target = written_path(path)
        if not is_complete(result) and _holds_complete_result(target):
            status = incomplete_kind(result)
            beside = target.with_name(f"{target.stem}.{status}{target.suffix}")
            return Saved(str(write_exclusively(beside, result)), kept=path)
        if target.exists() and not target.is_file():
            # It became a FIFO or a device since the grade began: never replace one.
            raise ResultFileError(f"cannot write {path}: it is no longer a regular file")
        write_atomically(target, result)
        return Saved(path)
    except ResultFileError as error:
        name = Path(path).name or "result.json"
        return Saved(_fall_back(result, name), error=str(error))


def last_resort_text(result: GradeResult) -> str:
    """The result as text, for a grade that could save it nowhere (printed to stderr)."""
    return dumps(result, ensure_ascii=True)

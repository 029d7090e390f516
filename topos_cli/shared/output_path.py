"""One guard for every file a command writes, checked before the command does any work.

Every command that writes (grade's result, benchmark list and report; frontier's
picture; report's page and PNG; history's page; check's JSON) asks this module
first, so the same mistakes are refused the same way, in one line (exit 2):

- a directory, device, FIFO or socket is never replaced by a regular file, nor
  is one that a symbolic link points at (a link to a regular file is written
  through: its target is replaced, the link stays);
- a path under a file, or under a folder this user cannot write, is refused
  before any work rather than after it;
- `-` is standard output where the command allows it, and refused elsewhere
  (never a file named `-`);
- no output is also an input of the same command (the result a report reads,
  a file or folder history reads), and no two outputs of one command name the
  same file (or both standard output).

Nothing is created: a usage error must leave no folder behind. This module
imports nothing of topos_cli but shared/, so harness and report both use it.

A command that writes many files into one folder it owns (`history --site`) writes
each through `write_inside`, stricter still: no symbolic link inside the folder is
followed (a page planted as a link to an input is refused, the input untouched), no
device, FIFO or folder is replaced, and a hard link is broken, never written through.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath

from topos.system.atomic_file import write_bytes_atomically
from topos_cli.shared.errors import ResultFileError, ToposUsageError

#: The path that means standard output, where a command allows it.
STANDARD_OUTPUT = "-"


def written_path(path: str | os.PathLike[str]) -> Path:
    """The file a write to `path` replaces: a symbolic link's target (links are written through)."""
    return Path(os.path.realpath(path))


def check_output(
    path: str | os.PathLike[str], option: str, *, standard_output: bool = False
) -> None:
    """Raises `ToposUsageError` now if `path` could not, or must not, be written later.

    `option` names the path in the message (`--html`, `the report beside the
    result`); `standard_output` says whether `-` may mean standard output here.
    """
    text = str(path)
    if text == STANDARD_OUTPUT:
        if standard_output:
            return
        raise ToposUsageError(f"{option} -: this output cannot go to standard output; name a file")
    if not text.strip():
        raise ToposUsageError(f"{option} names no file")
    target = written_path(text)
    try:
        facts = os.stat(target)
    except FileNotFoundError:
        facts = None
    except OSError as error:
        raise ResultFileError(f"{option} {text}: cannot write it: {error.strerror}") from None
    if facts is not None:
        if stat.S_ISDIR(facts.st_mode):
            raise ResultFileError(f"{option} {text}: cannot write it: it is a directory")
        if not stat.S_ISREG(facts.st_mode):
            # A link to a device is refused too: `target` is what the link points at.
            raise ResultFileError(
                f"{option} {text}: cannot write it: it is not a regular file "
                f"(a device, FIFO or socket); only a regular file is replaced"
            )
    for ancestor in (target.parent, *target.parent.parents):
        if not ancestor.exists():
            continue
        if not ancestor.is_dir():
            raise ResultFileError(
                f"{option} {text}: cannot write it: {ancestor} is not a directory"
            )
        if not os.access(ancestor, os.W_OK | os.X_OK):
            raise ResultFileError(f"{option} {text}: cannot write it: {ancestor} is not writable")
        _probe(ancestor, option, text)
        break


def _probe(folder: Path, option: str, path: str) -> None:
    """Makes and removes a folder in `folder`, the nearest that exists: what `os.access`
    cannot tell (root is granted everything, `/proc` and read-only mounts refuse anyway)
    is found before any work, and nothing is left behind."""
    try:
        probe = tempfile.mkdtemp(prefix=".topos-probe-", dir=folder)
    except OSError as error:
        raise ResultFileError(
            f"{option} {path}: cannot write it: {folder}: {error.strerror}"
        ) from None
    with contextlib.suppress(OSError):
        os.rmdir(probe)


def check_distinct(paths: Mapping[str, str | os.PathLike[str] | None]) -> None:
    """Refuses two outputs that name one file (after following links), or that both go to
    standard output: one would clobber the other. `paths` maps option names to paths
    (`None` is skipped)."""
    seen: dict[Path | str, str] = {}
    for option, path in paths.items():
        if path is None:
            continue
        text = str(path)
        key: Path | str = text if text == STANDARD_OUTPUT else written_path(text)
        if key == STANDARD_OUTPUT and key in seen:
            raise ToposUsageError(f"{seen[key]} and {option} cannot both go to standard output")
        if key in seen:
            raise ToposUsageError(f"{seen[key]} and {option} name the same file, {text}")
        seen[key] = option


def check_not_input(
    outputs: Mapping[str, str | os.PathLike[str] | None],
    inputs: Mapping[str, str | os.PathLike[str] | None],
    *,
    read_in_folder: Callable[[Path], bool] = lambda _: True,
) -> None:
    """Refuses an output that is also an input of the same command: writing it would
    destroy what is being read (or, inside an input folder, add to what is read next).

    `inputs` maps what names each input (an argument, `--baseline`) to its path;
    an output equal to an input file is refused, as is one inside an input folder
    for which `read_in_folder` says the command would read such a file there.
    """
    read: list[tuple[str, str, Path]] = [
        (name, str(path), written_path(path))
        for name, path in inputs.items()
        if path is not None and str(path) != STANDARD_OUTPUT
    ]
    for option, path in outputs.items():
        if path is None or str(path) == STANDARD_OUTPUT:
            continue
        target = written_path(path)
        for name, shown, source in read:
            if target == source:
                raise ToposUsageError(
                    f"{option} {path} is {name} {shown}, which this command reads; "
                    f"writing it would destroy it"
                )
            if source.is_dir() and source in target.parents and read_in_folder(target):
                raise ToposUsageError(
                    f"{option} {path} is inside {name} {shown}, which this command reads; "
                    f"write it elsewhere"
                )


def check_outputs(
    outputs: Mapping[str, str | os.PathLike[str] | None],
    inputs: Mapping[str, str | os.PathLike[str] | None] | None = None,
    *,
    standard_output: Iterable[str] = (),
    read_in_folder: Callable[[Path], bool] = lambda _: True,
) -> None:
    """The whole guard for one command: each output checked (`check_output`; the options
    in `standard_output` may be `-`), none an input (`check_not_input`), no two alike
    (`check_distinct`). Raises `ToposUsageError` (one line, exit 2) for the first problem."""
    allowed = set(standard_output)
    for option, path in outputs.items():
        if path is not None:
            check_output(path, option, standard_output=option in allowed)
    if inputs:
        check_not_input(outputs, inputs, read_in_folder=read_in_folder)
    check_distinct(outputs)


def write_output(path: str | os.PathLike[str], data: bytes) -> None:
    """Writes `data` to `path` whole or not at all (`write_bytes_atomically`), or to standard
    output for `-`; raises `OSError` for the caller to put in words."""
    if str(path) == STANDARD_OUTPUT:
        # Bytes to the descriptor itself: standard output may be wrapped in a text-only
        # guard (`output_stream`), and an HTML page or PNG is bytes already.
        sys.stdout.flush()
        descriptor, view = sys.stdout.fileno(), memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
        return
    write_bytes_atomically(path, data)


#: The longest name a file system takes for one file or folder (ext4, APFS, NTFS: 255).
LONGEST_NAME_BYTES = 255


def fitting_name(name: str, most_bytes: int = 100) -> str:
    """`name` shortened to at most `most_bytes` bytes of UTF-8 (far below
    `LONGEST_NAME_BYTES`, leaving room for a suffix), its cut end replaced by a digest of
    the whole so that two long names that share their start stay apart."""
    if len(name.encode("utf-8")) <= most_bytes:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    kept, size = [], 0
    for character in name:
        size += len(character.encode("utf-8"))
        if size > most_bytes - len(digest) - 1:
            break
        kept.append(character)
    return "".join(kept) + "-" + digest


def write_inside(folder: str | os.PathLike[str], relative: str, data: bytes) -> Path:
    """Writes `data` to `folder/relative` (`/`-separated) whole or not at all, making the
    folders on the way, and returns the path written. Nothing inside `folder` is
    followed: a symbolic link, a device, a FIFO, a socket or a folder where a folder or
    the file belongs is refused with `ResultFileError` (one line naming it), and a
    regular file is replaced by a rename (a hard link to an input is broken, the input
    kept). Raises `OSError` when the write itself fails (a full disk)."""
    parts = PurePosixPath(relative).parts
    if not parts or any(part in ("", ".", "..") or "/" in part for part in parts):
        raise ResultFileError(f"{folder}/{relative}: not a name inside the folder")
    shown = Path(folder)
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for part in parts[:-1]:
            shown = shown / part
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, dir_fd=descriptor)
            try:
                inner = os.open(
                    part,
                    os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                    dir_fd=descriptor,
                )
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise ResultFileError(_refusal(shown, descriptor, part, "a folder")) from None
                raise
            os.close(descriptor)
            descriptor = inner
        name = parts[-1]
        shown = shown / name
        try:
            facts = os.stat(name, dir_fd=descriptor, follow_symlinks=False)
        except FileNotFoundError:
            facts = None
        if facts is not None and not stat.S_ISREG(facts.st_mode):
            raise ResultFileError(_refusal(shown, descriptor, name, "a regular file"))
        _replace_inside(descriptor, name, data)
    finally:
        os.close(descriptor)
    return shown


def _refusal(shown: Path, folder: int, name: str, wanted: str) -> str:
    """Why `name` in the open folder `folder` is not written: what it is instead."""
    try:
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
    except OSError:
        mode = 0
    if stat.S_ISLNK(mode):
        kind = "a symbolic link, which is never followed"
    elif stat.S_ISDIR(mode):
        kind = "a directory"
    elif stat.S_ISREG(mode):
        kind = "a regular file"
    else:
        kind = "a device, FIFO or socket, which is never replaced"
    return f"cannot write {shown}: it is {kind}; {wanted} belongs there"


def _replace_inside(folder: int, name: str, data: bytes) -> None:
    """`data` into a temporary beside `name` in the open folder `folder`, synced and renamed
    over it; whatever stops the write removes the temporary."""
    temporary = f".{fitting_name(name, 100)}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(temporary, flags, 0o666, dir_fd=folder)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder)
        raise
    with contextlib.suppress(OSError):
        os.fsync(folder)

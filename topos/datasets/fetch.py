"""fetch: download a dataset's canonical files, verify them, and unpack them safely."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from topos.datasets.errors import DataError
from topos.datasets.mirror_url import check_mirror_url

if TYPE_CHECKING:
    from topos.datasets.transfer import Progress

#: The most bytes copied at once while unpacking a member.
UNPACK_BYTES = 1 << 20

#: Seconds a whole fetch may take by default: the CIFAR-10 archive (170 MB) needs
#: some 50 KB/s to arrive in time.
DEFAULT_TIMEOUT_SECONDS = 3600.0

#: The longest a fetch may be given: thirty days.
MAXIMUM_TIMEOUT_SECONDS = 30 * 24 * 3600.0


@dataclass(frozen=True)
class Download:
    """One file to download, its published MD5 and, when known, its size in bytes (a
    shorter download is reported as truncated, a longer one is cut off); an archive
    names the members to extract (everything else in it is ignored), a plain file is
    kept as it is."""

    file: str
    md5: str
    members: tuple[str, ...] = ()
    size: int | None = None


def _batches(folder: str, suffix: str) -> tuple[str, ...]:
    names = [f"data_batch_{number}" for number in range(1, 6)] + ["test_batch"]
    return tuple(f"{folder}/{name}{suffix}" for name in names)


# name -> (default mirror, files). The CIFAR-10 archives unpack into their
# batch folder; the MNIST files stay gzipped, as the loader reads them.
SOURCES: dict[str, tuple[str, tuple[Download, ...]]] = {
    "cifar10": (
        "https://www.cs.toronto.edu/~kriz/",
        (
            Download(
                "cifar-10-binary.tar.gz",
                "c32a1d4ab5d03f1284b67883e8d87530",
                _batches("cifar-10-batches-bin", ".bin"),
                170_052_171,
            ),
        ),
    ),
    "cifar10-python": (
        "https://www.cs.toronto.edu/~kriz/",
        (
            Download(
                "cifar-10-python.tar.gz",
                "c58f30108f718f92721af3b95e74349a",
                _batches("cifar-10-batches-py", ""),
                170_498_071,
            ),
        ),
    ),
    "mnist": (
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        (
            Download(
                "train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873", (), 9_912_422
            ),
            Download("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432", (), 28_881),
            Download(
                "t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3", (), 1_648_877
            ),
            Download("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c", (), 4_542),
        ),
    ),
}


def _extract(archive: Path, members: tuple[str, ...], destination: Path) -> None:
    """Writes the named regular members of a .tar.gz under `destination`.

    Paths come from `members`, never from the archive, so nothing can land outside
    `destination`; links, devices and unexpected members are never written.
    """
    import tarfile  # here: only a fetch unpacks, and a training process never fetches

    wanted = set(members)
    found: set[str] = set()
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                name = member.name.removeprefix("./")
                if name not in wanted:
                    continue
                if not member.isfile():
                    raise DataError(archive, f"member {name} is not a regular file")
                path = destination / name
                with tar.extractfile(member) as source:
                    _copy(source, path)
                found.add(name)
    except (tarfile.TarError, EOFError, zlib.error, OSError) as error:
        raise DataError(archive, f"corrupt archive: {error}") from None
    if missing := wanted - found:
        raise DataError(archive, f"lacks {', '.join(sorted(missing))}")


def _copy(source: BinaryIO, path: Path) -> None:
    """Writes an extracted member. A failure to read is the archive's (and propagates as
    it is); a failure to write is a DataError naming the file written."""

    def cannot_write(error: OSError) -> DataError:
        return DataError(path, f"cannot be written: {error.strerror or error}")

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        out = open(path, "wb")  # noqa: SIM115 - closed by the with below
    except OSError as error:
        raise cannot_write(error) from None
    with out:
        while chunk := source.read(UNPACK_BYTES):
            try:
                out.write(chunk)
            except OSError as error:
                raise cannot_write(error) from None


def _prepare(target: Path) -> Path:
    """Checks that `target` can be created and makes its staging folder beside it.

    `target` must be missing or an empty folder, and its nearest existing ancestor a
    writable folder: a path through a file, or under a folder that cannot be written,
    is refused in one line before anything is downloaded.
    """
    try:
        if target.exists() and (not target.is_dir() or any(target.iterdir())):
            raise DataError(target, "already exists and is not an empty folder")
        ancestor = target.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise DataError(target, f"cannot be created: {ancestor} is not a folder")
        if not os.access(ancestor, os.W_OK | os.X_OK):
            raise DataError(target, f"cannot be created: {ancestor} is not writable")
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    except OSError as error:
        raise DataError(target, f"cannot be created: {error.strerror or error}") from None
    # mkdtemp makes a private folder; the dataset folder it becomes is an ordinary one.
    staging.chmod(0o755)
    return staging


def fetch(
    name: str,
    target: str | Path,
    url: str | None = None,
    progress: Progress | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> Path:
    """Downloads dataset `name` ("cifar10", "cifar10-python" or "mnist") into `target`.

    `url` is the http(s) folder to download from (the canonical mirror when None).
    The whole fetch must end within `timeout` seconds, however slowly the server
    sends. Each file must have its published size and MD5. Everything is unpacked
    into a hidden staging folder beside `target`, then renamed into place, so a
    failure (or an interruption that raises, as KeyboardInterrupt does) never leaves
    a half-written `target` nor the staging folder; an existing `target` must be
    empty. Returns `target`, which the loaders accept as it is. Every problem is a
    one-line DataError naming the URL or the path.
    """
    try:
        mirror, downloads = SOURCES[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(sorted(SOURCES))}") from None
    if not (isinstance(timeout, int | float) and 0 < timeout <= MAXIMUM_TIMEOUT_SECONDS):
        raise ValueError(
            f"timeout must be a number of seconds above 0 and at most "
            f"{MAXIMUM_TIMEOUT_SECONDS:g}, not {timeout!r}"
        )
    # Imported here, not with the module: HTTP and TLS cost a training process (which
    # imports `topos.datasets` and never downloads) some 8 MiB of resident memory.
    from topos.datasets.transfer import transfer

    deadline = time.monotonic() + timeout
    mirror = check_mirror_url(url or mirror)
    target = Path(target)
    staging = _prepare(target)
    try:
        for download in downloads:
            file = staging / download.file
            transfer(
                mirror + download.file,
                file,
                download.md5,
                size=download.size,
                deadline=deadline,
                allowed_seconds=timeout,
                progress=progress,
            )
            if download.members:
                _extract(file, download.members, staging)
                file.unlink()
        try:
            if target.exists():
                target.rmdir()
            staging.rename(target)
        except OSError as error:
            raise DataError(target, f"cannot be created: {error.strerror or error}") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target

"""fetch: download a dataset's canonical files, verify them, and unpack them safely."""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from topos.datasets.errors import DataError

# Called as the bytes arrive: (file name, bytes so far, total bytes or None).
Progress = Callable[[str, int, int | None], None]

CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class Download:
    """One file to download and its published MD5; an archive names the members to
    extract (everything else in it is ignored), a plain file is kept as it is."""

    file: str
    md5: str
    members: tuple[str, ...] = ()


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
            ),
        ),
    ),
    "mnist": (
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        (
            Download("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
            Download("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
            Download("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
            Download("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
        ),
    ),
}


def _download(url: str, destination: Path, md5: str, progress: Progress | None) -> None:
    """Streams `url` into `destination`, then checks its MD5."""
    digest = hashlib.md5(usedforsecurity=False)
    done = 0
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(destination, "wb") as out:
            total = response.length
            while chunk := response.read(CHUNK_BYTES):
                out.write(chunk)
                digest.update(chunk)
                done += len(chunk)
                if progress is not None:
                    progress(destination.name, done, total)
    except (urllib.error.URLError, OSError) as error:
        raise DataError(url, f"download failed: {error}") from None
    if digest.hexdigest() != md5:
        raise DataError(url, f"MD5 {digest.hexdigest()} differs from the published {md5}")


def _extract(archive: Path, members: tuple[str, ...], destination: Path) -> None:
    """Writes the named regular members of a .tar.gz under `destination`.

    Paths come from `members`, never from the archive, so nothing can land outside
    `destination`; links, devices and unexpected members are never written.
    """
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
                path.parent.mkdir(parents=True, exist_ok=True)
                with tar.extractfile(member) as source, open(path, "wb") as out:
                    shutil.copyfileobj(source, out, CHUNK_BYTES)
                found.add(name)
    except (tarfile.TarError, EOFError, zlib.error, OSError) as error:
        raise DataError(archive, f"corrupt archive: {error}") from None
    if missing := wanted - found:
        raise DataError(archive, f"lacks {', '.join(sorted(missing))}")


def fetch(
    name: str,
    target: str | Path,
    url: str | None = None,
    progress: Progress | None = None,
) -> Path:
    """Downloads dataset `name` ("cifar10", "cifar10-python" or "mnist") into `target`.

    `url` is the folder to download from (the canonical mirror when None). Each
    file's MD5 must match the published one. Everything is unpacked into a
    temporary folder beside `target`, then renamed into place, so a failure never
    leaves a half-written `target`; an existing `target` must be empty. Returns
    `target`, which the loaders accept as it is.
    """
    try:
        mirror, downloads = SOURCES[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(sorted(SOURCES))}") from None
    mirror = (url or mirror).rstrip("/") + "/"
    target = Path(target)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise DataError(target, "already exists and is not an empty folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    # mkdtemp makes a private folder; the dataset folder it becomes is an ordinary one.
    staging.chmod(0o755)
    try:
        for download in downloads:
            file = staging / download.file
            _download(mirror + download.file, file, download.md5, progress)
            if download.members:
                _extract(file, download.members, staging)
                file.unlink()
        if target.exists():
            target.rmdir()
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target

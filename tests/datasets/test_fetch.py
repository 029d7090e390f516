"""fetch against a local http.server serving small generated files."""

import gzip
import hashlib
import importlib
import io
import tarfile

import numpy as np
import pytest

from tests.datasets.writers import (
    BATCHES,
    cifar_batches,
    idx_bytes,
    mnist_splits,
    write_cifar_binary,
)
from tests.local_http import raw_serving, serving
from topos.datasets import DataError, fetch, load_cifar10, load_mnist
from topos.datasets.fetch import Download

# The module, not the function the package exports under the same name.
fetch_module = importlib.import_module("topos.datasets.fetch")


@pytest.fixture
def server(tmp_path, monkeypatch):
    """A folder served over HTTP on 127.0.0.1, and its URL."""
    served = tmp_path / "served"
    served.mkdir()
    with serving(served, monkeypatch) as base:
        yield served, f"{base}/files"


def add_file(tar, name, content, kind=tarfile.REGTYPE, link=""):
    member = tarfile.TarInfo(name)
    member.type, member.linkname, member.size = kind, link, len(content)
    tar.addfile(member, io.BytesIO(content) if kind == tarfile.REGTYPE else None)


def cifar_archive(tmp_path, extra=(), skip=()):
    """A cifar-10-binary.tar.gz of tiny batches, plus `extra` members; its batches."""
    batches = cifar_batches(2)
    folder = write_cifar_binary(tmp_path / "source", batches)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        add_file(tar, "cifar-10-batches-bin/readme.html", b"<p>readme</p>")
        for name in BATCHES:
            if name not in skip:
                content = (folder / f"{name}.bin").read_bytes()
                add_file(tar, f"cifar-10-batches-bin/{name}.bin", content)
        for arguments in extra:
            add_file(tar, *arguments)
    return buffer.getvalue(), batches


def serve_cifar(served, monkeypatch, archive):
    (served / "files").mkdir(exist_ok=True)
    (served / "files" / "cifar-10-binary.tar.gz").write_bytes(archive)
    mirror, (download,) = fetch_module.SOURCES["cifar10"]
    patched = Download(download.file, hashlib.md5(archive).hexdigest(), download.members)
    monkeypatch.setitem(fetch_module.SOURCES, "cifar10", (mirror, (patched,)))


def test_fetches_unpacks_and_loads_cifar10(tmp_path, server, monkeypatch):
    served, url = server
    archive, batches = cifar_archive(
        tmp_path,
        extra=[
            ("../outside.txt", b"escaped"),
            ("/tmp/absolute.txt", b"escaped"),
            ("cifar-10-batches-bin/link", b"", tarfile.SYMTYPE, "/etc/passwd"),
        ],
    )
    serve_cifar(served, monkeypatch, archive)
    reports = []
    target = tmp_path / "data" / "cifar"
    assert (
        fetch("cifar10", target, url=url, progress=lambda *report: reports.append(report)) == target
    )
    assert sorted(path.name for path in target.rglob("*")) == sorted(
        ["cifar-10-batches-bin", *(f"{name}.bin" for name in BATCHES)]
    )
    assert not (tmp_path / "data" / "outside.txt").exists()
    assert reports[-1] == ("cifar-10-binary.tar.gz", len(archive), len(archive))
    assert sorted(path.name for path in (tmp_path / "data").iterdir()) == ["cifar"]
    dataset = load_cifar10(target)
    assert np.array_equal(dataset.test.pixels, batches["test_batch"][0])
    assert np.array_equal(dataset.train.labels[:2], batches["data_batch_1"][1])


def test_fetches_mnist_files_as_they_are(tmp_path, server, monkeypatch):
    served, url = server
    (served / "files").mkdir()
    splits = mnist_splits()
    downloads = []
    for download, array in zip(
        fetch_module.SOURCES["mnist"][1],
        (*splits["train"], *splits["test"]),
    ):
        content = gzip.compress(idx_bytes(array), mtime=0)
        (served / "files" / download.file).write_bytes(content)
        downloads.append(Download(download.file, hashlib.md5(content).hexdigest()))
    monkeypatch.setitem(fetch_module.SOURCES, "mnist", ("unused", tuple(downloads)))
    target = fetch("mnist", tmp_path / "mnist", url=url + "/")
    dataset = load_mnist(target)
    assert dataset.format == "idx.gz"
    assert np.array_equal(dataset.train.pixels[:, 0], splits["train"][0])
    assert np.array_equal(dataset.test.labels, splits["test"][1])


def assert_nothing_left(tmp_path):
    assert sorted(path.name for path in tmp_path.iterdir()) == ["served", "source"]


def test_an_md5_mismatch_leaves_nothing_behind(tmp_path, server, monkeypatch):
    served, url = server
    (served / "files").mkdir()
    archive, _ = cifar_archive(tmp_path)
    (served / "files" / "cifar-10-binary.tar.gz").write_bytes(archive)
    # The published MD5, and this archive's size: the size check passes, the MD5 fails.
    mirror, (download,) = fetch_module.SOURCES["cifar10"]
    patched = Download(download.file, download.md5, download.members, len(archive))
    monkeypatch.setitem(fetch_module.SOURCES, "cifar10", (mirror, (patched,)))
    with pytest.raises(DataError) as caught:
        fetch("cifar10", tmp_path / "cifar", url=url)
    assert str(caught.value) == (
        f"{url}/cifar-10-binary.tar.gz: MD5 {hashlib.md5(archive).hexdigest()} "
        "differs from the published c32a1d4ab5d03f1284b67883e8d87530"
    )
    assert_nothing_left(tmp_path)


def test_an_expected_member_that_is_a_link_is_refused(tmp_path, server, monkeypatch):
    served, url = server
    archive, _ = cifar_archive(
        tmp_path,
        extra=[("cifar-10-batches-bin/test_batch.bin", b"", tarfile.SYMTYPE, "/etc/passwd")],
        skip=["test_batch"],
    )
    serve_cifar(served, monkeypatch, archive)
    with pytest.raises(
        DataError, match=r"member cifar-10-batches-bin/test_batch\.bin is not a regular file"
    ):
        fetch("cifar10", tmp_path / "cifar", url=url)
    assert_nothing_left(tmp_path)


def test_an_archive_lacking_a_batch_is_refused(tmp_path, server, monkeypatch):
    served, url = server
    archive, _ = cifar_archive(tmp_path, skip=["data_batch_3"])
    serve_cifar(served, monkeypatch, archive)
    with pytest.raises(DataError, match=r"lacks cifar-10-batches-bin/data_batch_3\.bin$"):
        fetch("cifar10", tmp_path / "cifar", url=url)
    assert_nothing_left(tmp_path)


def test_a_failed_download_leaves_nothing_behind(tmp_path, server):
    _, url = server
    with pytest.raises(
        DataError, match=r"cifar-10-binary\.tar\.gz: download failed: HTTP Error 404"
    ):
        fetch("cifar10", tmp_path / "cifar", url=url)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["served"]


def test_an_occupied_target_is_never_overwritten(tmp_path):
    target = tmp_path / "occupied"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(DataError, match="occupied: already exists and is not an empty folder"):
        fetch("cifar10", target, url="http://127.0.0.1:9/")
    assert (target / "keep.txt").read_text() == "mine"


def test_an_empty_target_folder_is_filled(tmp_path, server, monkeypatch):
    served, url = server
    archive, _ = cifar_archive(tmp_path)
    serve_cifar(served, monkeypatch, archive)
    target = tmp_path / "empty"
    target.mkdir()
    fetch("cifar10", target, url=url)
    assert load_cifar10(target).format == "cifar-10-batches-bin"


def test_unknown_name(tmp_path):
    with pytest.raises(ValueError, match="unknown dataset 'svhn'"):
        fetch("svhn", tmp_path / "x")


def test_a_body_shorter_than_its_content_length_is_truncated_not_an_md5_mismatch(
    tmp_path, monkeypatch
):
    """No published size here: the length the server announced is what is checked."""

    def short(connection, stopping):
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + bytes(600))

    mirror, (download,) = fetch_module.SOURCES["cifar10"]
    monkeypatch.setitem(
        fetch_module.SOURCES, "cifar10", (mirror, (Download(download.file, download.md5),))
    )
    with raw_serving(short, monkeypatch) as base, pytest.raises(DataError) as caught:
        fetch("cifar10", tmp_path / "cifar", url=base)
    assert str(caught.value) == f"{base}/cifar-10-binary.tar.gz: truncated: got 600 of 1000 bytes"
    assert list(tmp_path.iterdir()) == []


def test_the_deadline_covers_the_whole_fetch_and_is_checked(tmp_path, monkeypatch):
    def trickle(connection, stopping):
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 9912422\r\n\r\n")
        while not stopping.wait(0.1):
            connection.sendall(b"x")

    with raw_serving(trickle, monkeypatch) as base, pytest.raises(DataError) as caught:
        fetch("mnist", tmp_path / "mnist", url=base, timeout=0.5)
    assert "train-images-idx3-ubyte.gz: took longer than the 0.5 s allowed: got " in str(
        caught.value
    )
    assert list(tmp_path.iterdir()) == []
    for timeout in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="timeout must be a number of seconds"):
            fetch("mnist", tmp_path / "mnist", url=base, timeout=timeout)


def test_plain_progress_says_how_far_a_slow_download_has_come(monkeypatch):
    from topos_cli.commands import download_progress as module

    clock = iter([0.0, 0.0, 5.0, 11.0, 12.0, 30.0])
    monkeypatch.setattr(module.time, "monotonic", lambda: next(clock))
    stream = io.StringIO()
    with module.plain_download_progress(stream, interval=10.0) as progress:
        progress("file.gz", 0, 3 << 20)
        progress("file.gz", 1 << 20, 3 << 20)  # 5 s: too soon for a line
        progress("file.gz", 2 << 20, 3 << 20)  # 11 s: a line
        progress("file.gz", 3 << 20, 3 << 20)
    assert stream.getvalue().splitlines() == [
        "downloading file.gz (3.0 MiB)",
        "file.gz: 2.0 MiB of 3.0 MiB",
        "downloaded file.gz (3.0 MiB)",
    ]

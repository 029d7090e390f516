"""`topos data fetch` against a local HTTP server, and `topos data info` on tiny files."""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import os
import signal
import sys
import tarfile
import time
from pathlib import Path

import pytest

from tests.cli.grading import one_line_error, start_topos, topos
from tests.datasets.writers import (
    BATCHES,
    cifar_batches,
    mnist_splits,
    write_cifar_binary,
    write_mnist,
)
from tests.local_http import raw_serving, serving
from topos.datasets.fetch import Download
from topos_cli.app import main

# The module, not the function the package exports under the same name.
fetch_module = importlib.import_module("topos.datasets.fetch")


@pytest.fixture
def server(tmp_path, monkeypatch):
    """A folder served over HTTP on 127.0.0.1, and the URL of its `files` folder."""
    served = tmp_path / "served"
    (served / "files").mkdir(parents=True)
    with serving(served, monkeypatch) as base:
        yield served / "files", f"{base}/files"


def cifar_archive(tmp_path) -> bytes:
    """A cifar-10-binary.tar.gz of tiny batches (two images each)."""
    folder = write_cifar_binary(tmp_path / "source", cifar_batches(2))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name in BATCHES:
            content = (folder / f"{name}.bin").read_bytes()
            member = tarfile.TarInfo(f"cifar-10-batches-bin/{name}.bin")
            member.size = len(content)
            tar.addfile(member, io.BytesIO(content))
    return buffer.getvalue()


def run_main(monkeypatch, capsys, *arguments):
    """Runs `topos ARGUMENTS` in this process; returns (exit status, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["topos", *arguments])
    with pytest.raises(SystemExit) as ended:
        main()
    captured = capsys.readouterr()
    return ended.value.code, captured.out, captured.err


def test_fetch_downloads_verifies_and_unpacks_cifar10(tmp_path, server, monkeypatch, capsys):
    files, url = server
    archive = cifar_archive(tmp_path)
    (files / "cifar-10-binary.tar.gz").write_bytes(archive)
    # The published MD5 is the real archive's; this test serves its own.
    mirror, (download,) = fetch_module.SOURCES["cifar10"]
    patched = Download(download.file, hashlib.md5(archive).hexdigest(), download.members)
    monkeypatch.setitem(fetch_module.SOURCES, "cifar10", (mirror, (patched,)))
    target = tmp_path / "data" / "cifar10"
    status, out, err = run_main(
        monkeypatch, capsys, "data", "fetch", "cifar10", "--to", str(target), "--url", url
    )
    assert status == 0, err
    assert f"fetched cifar10 into {target}" in out
    assert f"topos grade --workload cifar10 --data {target}" in out
    # Progress: one line when the download starts and one when it is complete.
    assert "downloading cifar-10-binary.tar.gz" in err and "downloaded cifar-10-binary" in err
    assert sorted(path.name for path in (target / "cifar-10-batches-bin").iterdir()) == sorted(
        f"{name}.bin" for name in BATCHES
    )
    status, out, err = run_main(monkeypatch, capsys, "data", "info", str(target))
    assert status == 0, err
    assert "dataset: cifar10" in out and "cifar-10-batches-bin" in out
    assert "train: 10 images of 3x32x32" in out


def test_fetch_refuses_a_corrupt_download_in_one_line_and_creates_nothing(tmp_path, server):
    files, url = server
    (files / "cifar-10-binary.tar.gz").write_bytes(b"certainly not the published archive")
    target = tmp_path / "cifar10"
    completed = topos("data", "fetch", "cifar10", "--to", str(target), "--url", url, cwd=tmp_path)
    assert completed.returncode == 2
    line = one_line_error(completed)
    assert f"{url}/cifar-10-binary.tar.gz" in line and "differs from the published" in line
    assert not target.exists()
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []


def test_fetch_names_a_missing_file_in_one_line(tmp_path, server):
    _, url = server
    target = str(tmp_path / "mnist")
    completed = topos("data", "fetch", "mnist", "--to", target, "--url", url, cwd=tmp_path)
    assert completed.returncode == 2
    assert "train-images-idx3-ubyte.gz: download failed" in one_line_error(completed)


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        (["imagenet", "--to", "x"], "unknown dataset 'imagenet'"),
        (["mnist", "--to", "x", "--format", "py"], "--format applies to cifar10"),
        (["cifar10", "--to", "x", "--format", "jpeg"], "--format 'jpeg': choose bin or py"),
        (["cifar10"], "Missing option '--to'"),
    ],
)
def test_fetch_usage_errors_are_one_line_exit_2(tmp_path, arguments, fragment):
    completed = topos("data", "fetch", *arguments, cwd=tmp_path)
    assert completed.returncode == 2
    assert fragment in one_line_error(completed)


def test_fetch_will_not_overwrite_a_folder_with_files(tmp_path, server):
    _, url = server
    target = tmp_path / "taken"
    target.mkdir()
    (target / "precious").write_text("keep me")
    completed = topos("data", "fetch", "mnist", "--to", str(target), "--url", url, cwd=tmp_path)
    assert completed.returncode == 2
    assert "already exists and is not an empty folder" in one_line_error(completed)
    assert (target / "precious").read_text() == "keep me"


def test_info_describes_mnist_files_and_their_fingerprints(tmp_path):
    folder = write_mnist(tmp_path / "mnist", mnist_splits((12, 4)), compressed=True)
    completed = topos("data", "info", str(folder), cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0] == "dataset: mnist" and lines[1] == f"source: {folder} (idx.gz)"
    assert lines[2].startswith("fingerprint: ") and len(lines[2].split()[1]) == 64
    assert lines[3].startswith("train: 12 images of 1x28x28, 10 classes")
    assert lines[4].startswith("test: 4 images of 1x28x28")
    as_json = topos("data", "info", str(folder), "--json", cwd=tmp_path)
    description = json.loads(as_json.stdout)
    assert description["splits"]["train"]["images"] == 12
    assert description["fingerprint"] == lines[2].split()[1]


def test_info_of_cifar10_binary_files_with_the_dataset_named(tmp_path):
    folder = write_cifar_binary(tmp_path / "cifar", cifar_batches(3))
    completed = topos("data", "info", str(folder), "--dataset", "cifar10", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert "train: 15 images of 3x32x32" in completed.stdout
    assert "test: 3 images of 3x32x32" in completed.stdout


@pytest.mark.parametrize(
    ("setup", "arguments", "fragment"),
    [
        (None, ["nowhere"], "nowhere"),
        ("empty", ["{folder}"], "holds neither CIFAR-10 batches nor MNIST IDX files"),
        ("truncated", ["{folder}"], "train-images-idx3-ubyte"),
        (None, ["--dataset", "svhn"], "unknown dataset 'svhn'"),
    ],
)
def test_info_data_errors_name_the_file_in_one_line_exit_2(tmp_path, setup, arguments, fragment):
    folder = tmp_path / "data"
    if setup == "empty":
        folder.mkdir()
    elif setup == "truncated":
        write_mnist(folder, mnist_splits((12, 4)))
        images = folder / "train-images-idx3-ubyte"
        images.write_bytes(images.read_bytes()[:-10])
    arguments = [argument.format(folder=folder) for argument in arguments]
    completed = topos("data", "info", *arguments, cwd=tmp_path)
    assert completed.returncode == 2, completed.stdout
    assert fragment in one_line_error(completed)


# The first MNIST file and its published size: what `topos data fetch mnist` asks for first.
FIRST_MNIST_FILE, FIRST_MNIST_SIZE = "train-images-idx3-ubyte.gz", 9_912_422


def head(length: int | None = FIRST_MNIST_SIZE, *extra: str) -> bytes:
    lines = ["HTTP/1.1 200 OK", "Connection: close", *extra]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def trickle(connection, stopping):
    """A byte of body every 0.2 s, for ever: what a per-read timeout never ends."""
    connection.sendall(head())
    while not stopping.wait(0.2):
        connection.sendall(b"x")


def trickled_head(connection, stopping):
    """The status line, then a byte of a header every 0.2 s, for ever."""
    connection.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    while not stopping.wait(0.2):
        connection.sendall(b"x")


def broken_chunks(connection, stopping):
    connection.sendall(head(None, "Transfer-Encoding: chunked") + b"5\r\nhello\r\nzz-not-hex\r\n")


def short_body(connection, stopping):
    connection.sendall(head() + b"only this much")


def long_body(connection, stopping):
    """A body without a Content-Length that runs past the published size."""
    connection.sendall(head(None))
    for _ in range(FIRST_MNIST_SIZE // 65536 + 2):
        if stopping.is_set():
            return
        connection.sendall(bytes(65536))


def redirect_to_a_file(connection, stopping):
    connection.sendall(
        b"HTTP/1.1 302 Found\r\nLocation: file:///etc/passwd\r\nContent-Length: 0\r\n\r\n"
    )


def redirect_to_ftp(connection, stopping):
    connection.sendall(
        b"HTTP/1.1 302 Found\r\nLocation: ftp://127.0.0.1/x\r\nContent-Length: 0\r\n\r\n"
    )


@pytest.mark.parametrize(
    ("respond", "arguments", "problem"),
    [
        (trickle, ["--timeout", "1.5"], "took longer than the 1.5 s allowed: got "),
        (trickled_head, ["--timeout", "1.5"], "took longer than the 1.5 s allowed: got 0 of "),
        (broken_chunks, [], "download failed: malformed HTTP response (IncompleteRead"),
        (short_body, [], f"truncated: got 14 of {FIRST_MNIST_SIZE} bytes"),
        (long_body, [], f"too long: more than the {FIRST_MNIST_SIZE} bytes expected"),
        (redirect_to_a_file, [], "download failed: HTTP Error 302: Found - Redirection to url"),
        (redirect_to_ftp, [], "download failed: redirected to ftp://127.0.0.1/x, which is not"),
    ],
)
def test_fetch_from_a_misbehaving_server_ends_in_one_line_and_leaves_nothing(
    tmp_path, monkeypatch, respond, arguments, problem
):
    with raw_serving(respond, monkeypatch) as base:
        target = tmp_path / "mnist"
        completed = topos(
            "data", "fetch", "mnist", "--to", str(target), "--url", base, *arguments,
            cwd=tmp_path, timeout=30,
        )  # fmt: skip
    assert completed.returncode == 2, completed.stderr
    line = one_line_error(completed)
    assert line.startswith(f"topos: error: {base}/{FIRST_MNIST_FILE}: {problem}"), line
    assert sorted(path.name for path in tmp_path.iterdir()) == []


@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT])
def test_fetch_interrupted_by_a_signal_removes_its_staging_folder(
    tmp_path, monkeypatch, signal_number
):
    with raw_serving(trickle, monkeypatch) as base:
        process = start_topos(
            "data", "fetch", "mnist", "--to", str(tmp_path / "mnist"), "--url", base,
            cwd=tmp_path, stdout=None,
        )  # fmt: skip
        try:
            # The staging folder exists once the download has begun.
            deadline = time.monotonic() + 20
            while not list(tmp_path.glob(".mnist.partial-*")) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert list(tmp_path.glob(".mnist.partial-*")), "the fetch never started"
            time.sleep(0.3)
            process.send_signal(signal_number)
            _, stderr = process.communicate(timeout=10)
        finally:
            process.kill()
    assert process.returncode == 130, stderr
    assert f"interrupted; {tmp_path / 'mnist'} was not created" in stderr
    assert "Traceback" not in stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("notaurl", "notaurl: not an http(s) URL (it has no scheme)"),
        ("http://[::1", "http://[::1: not a valid URL: Invalid IPv6 URL"),
        ("file:///etc", "file:///etc: not an http(s) URL (its scheme is file:)"),
        ("http://127.0.0.1:99999/", "http://127.0.0.1:99999/: not a valid URL: Port out of range"),
        ("http://", "http://: names no host"),
    ],
)
def test_fetch_refuses_a_bad_url_before_creating_anything(tmp_path, url, problem):
    completed = topos("data", "fetch", "mnist", "--to", "mnist", "--url", url, cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    assert one_line_error(completed).startswith(f"topos: error: {problem}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("timeout", ["0", "-5", "inf", "nan", "1e12"])
def test_fetch_refuses_a_timeout_that_is_no_deadline(tmp_path, timeout):
    completed = topos("data", "fetch", "mnist", "--to", "x", "--timeout", timeout, cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    assert "--timeout must be a number of seconds above 0" in one_line_error(completed)


def test_fetch_refuses_a_target_through_a_file(tmp_path):
    (tmp_path / "file").write_text("in the way")
    target = tmp_path / "file" / "mnist"
    completed = topos("data", "fetch", "mnist", "--to", str(target), cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    assert one_line_error(completed) == (
        f"topos: error: {target}: cannot be created: {tmp_path / 'file'} is not a folder"
    )


def test_fetch_refuses_a_target_under_a_folder_it_cannot_write(tmp_path):
    if os.geteuid() == 0:
        # Root writes through permissions; sysfs refuses new folders to everyone.
        target, problem = Path("/sys/topos-fetch-test/mnist"), "cannot be created: "
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        target, problem = locked / "mnist", f"cannot be created: {locked} is not writable"
    completed = topos("data", "fetch", "mnist", "--to", str(target), cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    assert one_line_error(completed).startswith(f"topos: error: {target}: {problem}")
    assert not target.parent.exists() or not list(target.parent.glob(".mnist.partial-*"))

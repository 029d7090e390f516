"""Archives are untrusted input (issue 43, class 1): `topos history` reads a zip bomb,
a damaged, encrypted or oddly compressed member, a FIFO or a link to /dev/zero named as
an archive, each within bounds, with one note naming the archive and the member, and
draws the rest of the history (exit 0). Every archive here is built by the test; each run
is bounded by a subprocess timeout, never a timed assertion."""

from __future__ import annotations

import io
import json
import os
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest

from tests.cli.grading import topos
from tests.cli.machines import machine_result
from topos_cli.judge.history import read_history
from topos_cli.result import result_archive
from topos_cli.shared.errors import ToposError

#: Long enough for a machine with three other engineers on it; a bomb read without
#: bounds takes minutes to hours (issue 43: 400 overlapping entries took 227 s).
BOUNDED = 60


def good_result(folder: Path, name: str = "good.json", day: int = 4) -> Path:
    """One readable grade result beside the hostile archive."""
    path = folder / name
    result = machine_result("ubuntu-latest", repeats=2, created=f"2026-08-1{day}T10:00:00Z")
    path.write_text(json.dumps(result))
    return path


def result_bytes(day: int = 5) -> bytes:
    """A second readable result, to go inside an archive beside a hostile member."""
    result = machine_result("ubuntu-latest", repeats=2, created=f"2026-08-1{day}T10:00:00Z")
    return json.dumps(result).encode()


def zip_bytes(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _directory(data: bytes) -> tuple[int, int, int]:
    """The end record's offset, and the central directory's offset and size."""
    end = data.rfind(b"PK\x05\x06")
    size, offset = struct.unpack_from("<II", data, end + 12)
    return end, offset, size


def overlapping_bomb(copies: int, inflated: int) -> bytes:
    """A zip whose `copies` directory entries all point at one deflated member of
    `inflated` bytes: each entry read is the whole member inflated again."""
    member = b" " * inflated  # JSON whitespace: inflating it is the whole cost
    single = zip_bytes({"bomb.json": member})
    end, offset, size = _directory(single)
    entry = single[offset : offset + size]
    directory = entry * copies
    record = bytearray(single[end : end + 22])
    struct.pack_into("<HHII", record, 8, copies, copies, len(directory), offset)
    return single[:offset] + directory + bytes(record)


def with_flags(data: bytes, *, flags: int = 0, method: int | None = None) -> bytes:
    """`data` (a one-member zip) with flag bits or compression method rewritten in both
    the local header and the directory entry, as an encrypting or Deflate64 tool writes."""
    data = bytearray(data)
    _, offset, _ = _directory(bytes(data))
    for header, flag_at in ((0, 6), (offset, 8)):
        (old,) = struct.unpack_from("<H", data, header + flag_at)
        struct.pack_into("<H", data, header + flag_at, old | flags)
        if method is not None:
            struct.pack_into("<H", data, header + flag_at + 2, method)
    return bytes(data)


def history_of(*paths: Path, cwd: Path):
    return topos(
        "history", *map(str, paths), "--html", str(cwd / "h.html"), cwd=cwd, timeout=BOUNDED
    )


def assert_drawn_with_note(completed, note: str) -> None:
    """Exit 0, the good result drawn, and exactly the note asked for among the skips."""
    assert completed.returncode == 0, completed.stderr
    assert "Traceback" not in completed.stderr and "internal error" not in completed.stderr
    assert note in completed.stdout + completed.stderr, completed.stdout + completed.stderr


def test_a_zip_bomb_of_overlapping_entries_is_read_once(tmp_path):
    bomb = tmp_path / "bomb.zip"
    bomb.write_bytes(overlapping_bomb(copies=2000, inflated=16 * 1024 * 1024))
    assert bomb.stat().st_size < 400_000
    completed = history_of(bomb, good_result(tmp_path), cwd=tmp_path)
    assert_drawn_with_note(
        completed, "bomb.json and 1998 more entries are not read: their data overlap"
    )


def test_a_zip_bomb_is_bounded_in_what_it_inflates(tmp_path, monkeypatch):
    # In the process: the bytes inflated are counted, whatever the directory declares.
    inflated = []
    original = result_archive._Budget.read

    def counted(self, stream, *, spend=True):
        data = original(self, stream, spend=spend)
        inflated.append(len(data))
        return data

    monkeypatch.setattr(result_archive._Budget, "read", counted)
    bomb = tmp_path / "bomb.zip"
    bomb.write_bytes(overlapping_bomb(copies=400, inflated=8 * 1024 * 1024))
    notes = [error for _, error in result_archive.archive_results(bomb)]
    assert sum(inflated) <= 8 * 1024 * 1024 + 1
    assert all(isinstance(note, ToposError) for note in notes)


def test_many_members_inflate_no_more_than_the_archive_may(tmp_path, monkeypatch):
    monkeypatch.setattr(result_archive, "MOST_INFLATED_BYTES", 3 * 1024 * 1024)
    members = {f"m{index}.json": b" " * (1024 * 1024) for index in range(10)}
    archive = tmp_path / "many.zip"
    archive.write_bytes(zip_bytes(members))
    notes = [str(error) for _, error in result_archive.archive_results(archive)]
    assert notes[-1].endswith("an archive may inflate are not read")
    assert len(notes) <= 4


def test_a_directory_claiming_a_million_entries_is_refused_before_it_is_parsed(tmp_path):
    data = bytearray(zip_bytes({"a.json": b"{}"}))
    end, _, _ = _directory(bytes(data))
    struct.pack_into("<HH", data, end + 8, 0xFFFF, 0xFFFF)
    zip64 = bytearray(data[:end])
    record = len(zip64)
    zip64 += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, 10**6, 10**6, 46, 0)
    zip64 += struct.pack("<IIQI", 0x07064B50, 0, record, 1)
    zip64 += data[end:]
    archive = tmp_path / "claims.zip"
    archive.write_bytes(bytes(zip64))
    history = read_history([archive, good_result(tmp_path)])
    assert any("more than 10000 entries" in note for note in history.skipped), history.skipped


def test_an_encrypted_member_is_one_note_and_the_rest_is_drawn(tmp_path):
    data = with_flags(zip_bytes({"secret.json": result_bytes()}), flags=0x1)
    archive = tmp_path / "locked.zip"
    archive.write_bytes(data)
    completed = history_of(archive, good_result(tmp_path), cwd=tmp_path)
    assert_drawn_with_note(completed, f"{archive}:secret.json is not read: it is encrypted")


def test_a_deflate64_member_is_one_note_and_the_rest_is_drawn(tmp_path):
    data = with_flags(zip_bytes({"odd.json": result_bytes()}), method=9)
    archive = tmp_path / "odd.zip"
    archive.write_bytes(data)
    completed = history_of(archive, good_result(tmp_path), cwd=tmp_path)
    assert_drawn_with_note(
        completed, f"{archive}:odd.json is not read: it is compressed by Deflate64"
    )


def test_a_damaged_zip_member_is_one_note_and_its_neighbours_are_read(tmp_path):
    data = bytearray(zip_bytes({"broken.json": result_bytes(5), "fine.json": result_bytes(6)}))
    data[30 + len("broken.json") + 40] ^= 0xFF  # inside broken.json's deflated bytes
    archive = tmp_path / "damaged.zip"
    archive.write_bytes(bytes(data))
    history = read_history([archive, good_result(tmp_path)])
    assert sum(len(group.points) for group in history.groups) == 2  # good.json, fine.json
    notes = [note for note in history.skipped if "broken.json" in note]
    assert len(notes) == 1 and "is not read: it is damaged" in notes[0], history.skipped


def test_a_damaged_tar_gz_is_one_note_and_the_rest_is_drawn(tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, day in (("first.json", 5), ("second.json", 6)):
            data = result_bytes(day)
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    data = bytearray(buffer.getvalue())
    assert zlib.decompress(bytes(data), 31)  # a sound gzip before the flip
    data[len(data) // 2] ^= 0xFF
    damaged = tmp_path / "damaged.tar.gz"
    damaged.write_bytes(bytes(data))
    completed = history_of(damaged, good_result(tmp_path), cwd=tmp_path)
    assert_drawn_with_note(completed, "is damaged")
    assert str(damaged) in completed.stdout + completed.stderr


@pytest.mark.parametrize("name", ["fifo.zip", "fifo.tar.gz"])
def test_a_fifo_named_as_an_archive_is_passed_over(tmp_path, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    completed = history_of(fifo, good_result(tmp_path), cwd=tmp_path)
    assert_drawn_with_note(completed, f"{fifo} is not a regular file")


@pytest.mark.parametrize("name", ["zero.zip", "zero.tgz"])
def test_a_link_to_dev_zero_named_as_an_archive_is_passed_over(tmp_path, name):
    link = tmp_path / name
    link.symlink_to("/dev/zero")
    completed = history_of(link, good_result(tmp_path), cwd=tmp_path)
    assert_drawn_with_note(completed, f"{link} is not a regular file")


def test_an_archive_larger_than_a_result_file_is_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(result_archive, "LARGEST_RESULT_BYTES", 1024)
    archive = tmp_path / "big.zip"
    archive.write_bytes(zip_bytes({"a.json": os.urandom(4096)}, method=zipfile.ZIP_STORED))
    with pytest.raises(ToposError, match="is not read: an archive is read up to"):
        list(result_archive.archive_results(archive))


def test_an_archive_in_a_folder_that_is_no_regular_file_is_a_note_not_a_silence(tmp_path):
    folder = tmp_path / "artifacts"
    folder.mkdir()
    good_result(folder)
    os.mkfifo(folder / "fifo.zip")
    (folder / "zero.tar.gz").symlink_to("/dev/zero")
    history = read_history([folder])
    assert sum(len(group.points) for group in history.groups) == 1
    for name in ("fifo.zip", "zero.tar.gz"):
        assert any(f"{folder / name} is not a regular file" in note for note in history.skipped)

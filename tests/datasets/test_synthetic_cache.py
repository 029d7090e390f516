"""The synthetic-data cache: hits give the same bytes, damage is regenerated, off is off."""

import json
import os

import numpy as np
import pytest

from topos.datasets import load_mnist
from topos.datasets.synthetic_cache import cache_directory, cached_split


def generator(calls):
    def generate():
        calls.append(1)
        return np.arange(24, dtype=np.uint8).reshape(2, 1, 3, 4), np.array([0, 1], np.uint8)

    return generate


def test_a_hit_returns_the_stored_bytes_without_generating(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOS_CACHE_DIR", str(tmp_path))
    calls = []
    first = cached_split("toy", (2, 1, 3, 4), generator(calls))
    second = cached_split("toy", (2, 1, 3, 4), generator(calls))
    assert len(calls) == 1
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_damaged_file_is_regenerated_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOS_CACHE_DIR", str(tmp_path))
    calls = []
    cached_split("toy", (2, 1, 3, 4), generator(calls))
    (stored,) = tmp_path.glob("*.npz")
    stored.write_bytes(stored.read_bytes()[:-20] + bytes(20))
    pixels = cached_split("toy", (2, 1, 3, 4), generator(calls)).pixels
    assert len(calls) == 2 and pixels.reshape(-1).tolist() == list(range(24))


def test_a_shape_mismatch_is_a_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOS_CACHE_DIR", str(tmp_path))
    calls = []
    cached_split("toy", (2, 1, 3, 4), generator(calls))
    cached_split("toy", (2, 1, 4, 3), generator(calls))
    assert len(calls) == 2


def test_off_means_no_files(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOS_CACHE_DIR", "off")
    assert cache_directory() is None
    calls = []
    cached_split("toy", (2, 1, 3, 4), generator(calls))
    cached_split("toy", (2, 1, 3, 4), generator(calls))
    assert len(calls) == 2


def test_a_cached_synthetic_set_has_the_pinned_bytes(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOS_CACHE_DIR", str(tmp_path))
    generated = load_mnist(None).test
    assert list(tmp_path.glob("synthetic-v1-mnist-*.npz"))
    cached = load_mnist(None).test
    assert cached.fingerprint == generated.fingerprint
    assert np.array_equal(cached.pixels, generated.pixels)


def test_checking_a_hit_copies_no_pixels(tmp_path, monkeypatch):
    """Reading a hit holds the pixels about once: checking their digest must not copy
    them (a copy doubled the grade worker's peak memory while it loaded cifar10)."""
    import tracemalloc

    monkeypatch.setenv("TOPOS_CACHE_DIR", str(tmp_path))
    shape = (256, 3, 64, 64)  # 3 MiB of pixels
    pixels = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    labels = np.zeros(256, np.uint8)
    cached_split("big", shape, lambda: (pixels, labels))
    tracemalloc.start()
    try:
        found = cached_split("big", shape, lambda: (pixels, labels)).pixels
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert np.array_equal(found, pixels)
    assert peak < 1.5 * pixels.nbytes, peak


SHAPE = (2, 1, 3, 4)


def entry(tmp_path, monkeypatch):
    """A sound cache entry in `tmp_path`: (archive, sidecar)."""
    monkeypatch.setenv("TOPOS_CACHE_DIR", str(tmp_path))
    cached_split("toy", SHAPE, generator([]))
    (archive,) = tmp_path.glob("*.npz")
    return archive, archive.with_suffix(".json")


def replace_with(path, damage):
    """Damages one file of an entry: new content, or a FIFO, a directory, a device."""
    path.unlink()
    if damage == "fifo":
        os.mkfifo(path)
    elif damage == "directory":
        path.mkdir()
    elif damage == "device":
        path.symlink_to("/dev/zero")
    else:
        path.write_bytes(damage)


@pytest.mark.parametrize(
    "damage",
    [
        b"[]",
        b'"text"',
        b"null",
        b"42",
        b'{"sha256": 5}',
        b"{}",
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="nested-past-the-recursion-limit"),
        b"\xff\xfe not text",
        b"",
        "fifo",
        "directory",
        "device",
    ],
)
def test_a_broken_sidecar_is_a_miss_and_is_rebuilt(tmp_path, monkeypatch, damage):
    _, sidecar = entry(tmp_path, monkeypatch)
    replace_with(sidecar, damage)
    calls = []
    pixels = cached_split("toy", SHAPE, generator(calls)).pixels
    assert len(calls) == 1 and pixels.reshape(-1).tolist() == list(range(24))
    if damage != "directory":  # a directory in the way stays; nothing is written past it
        assert isinstance(json.loads(sidecar.read_text()), dict)
        cached_split("toy", SHAPE, generator(calls))
        assert len(calls) == 1
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"PK\x03\x04 not a zip",
        pytest.param(bytes(10_000_000), id="ten-megabytes-of-zeros"),
        "fifo",
        "directory",
        "device",
    ],
)
def test_a_broken_archive_is_a_miss_and_is_rebuilt(tmp_path, monkeypatch, damage):
    archive, _ = entry(tmp_path, monkeypatch)
    replace_with(archive, damage)
    calls = []
    pixels = cached_split("toy", SHAPE, generator(calls)).pixels
    assert len(calls) == 1 and pixels.reshape(-1).tolist() == list(range(24))
    assert not list(tmp_path.glob(".*.tmp"))


def test_an_archive_whose_header_claims_more_is_a_miss_before_it_is_allocated(
    tmp_path, monkeypatch
):
    archive, _ = entry(tmp_path, monkeypatch)
    content = archive.read_bytes().replace(b"(2, 1, 3, 4)", b"(9, 1, 3, 4)")
    archive.write_bytes(content)
    calls = []
    cached_split("toy", SHAPE, generator(calls))
    assert len(calls) == 1


@pytest.mark.parametrize("failing", ["replace", "write"])
def test_a_failed_write_leaves_no_partial_file_and_no_half_entry(tmp_path, monkeypatch, failing):
    monkeypatch.setenv("TOPOS_CACHE_DIR", str(tmp_path))
    if failing == "replace":
        monkeypatch.setattr(os, "replace", fail_with(OSError(28, "No space left on device")))
    else:
        original = json.dumps

        def full_disk(value):
            if isinstance(value, dict) and "sha256" in value:
                raise OSError(28, "No space left on device")
            return original(value)

        monkeypatch.setattr(json, "dumps", full_disk)
    calls = []
    pixels = cached_split("toy", SHAPE, generator(calls)).pixels
    assert len(calls) == 1 and pixels.reshape(-1).tolist() == list(range(24))
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_write_leaves_nothing_and_is_not_swallowed(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(os, "replace", fail_with(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        cached_split("toy", SHAPE, generator([]))
    assert list(tmp_path.iterdir()) == []


def fail_with(error):
    def fail(*arguments, **options):
        raise error

    return fail


def test_a_hit_gives_the_fingerprint_it_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOS_CACHE_DIR", str(tmp_path))
    generated = load_mnist(None).test
    cached = load_mnist(None).test
    assert "fingerprint" in vars(cached)  # known from the check, not computed again
    del cached.__dict__["fingerprint"]
    assert cached.fingerprint == generated.fingerprint


def test_a_hit_is_checked_by_the_crc_that_binds_its_recorded_fingerprint(tmp_path, monkeypatch):
    _, sidecar = entry(tmp_path, monkeypatch)
    meta = json.loads(sidecar.read_text())
    assert set(meta) == {"sha256", "crc32"}
    calls = []
    hit = cached_split("toy", SHAPE, generator(calls))
    assert calls == [] and hit.sha256 == meta["sha256"]
    # The hit's arrays are the file's bytes, mapped read-only: nothing was copied.
    assert not hit.pixels.flags.writeable and not hit.pixels.flags.owndata
    # A recorded fingerprint edited by hand fails the CRC: a miss, rebuilt.
    sidecar.write_text(json.dumps({**meta, "sha256": "0" * 64}))
    rebuilt = cached_split("toy", SHAPE, generator(calls))
    assert calls == [1] and rebuilt.sha256 == meta["sha256"]
    assert json.loads(sidecar.read_text()) == meta


def test_an_entry_without_a_crc_is_checked_by_its_sha256_once_and_its_sidecar_completed(
    tmp_path, monkeypatch
):
    archive, sidecar = entry(tmp_path, monkeypatch)
    meta = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps({"sha256": meta["sha256"]}))  # as written before the CRC
    calls = []
    hit = cached_split("toy", SHAPE, generator(calls))
    assert calls == [] and hit.sha256 == meta["sha256"]
    assert json.loads(sidecar.read_text()) == meta
    assert not list(tmp_path.glob(".*.tmp"))
    # Without a CRC, a damaged pixel still fails its sha256.
    sidecar.write_text(json.dumps({"sha256": meta["sha256"]}))
    damage_a_pixel(archive)
    pixels = cached_split("toy", SHAPE, generator(calls)).pixels
    assert calls == [1] and pixels.reshape(-1).tolist() == list(range(24))


def damage_a_pixel(archive):
    """Changes one pixel byte inside the archive, its structure left sound."""
    data = archive.read_bytes()
    start = data.index(bytes(range(24)))
    archive.write_bytes(data[: start + 5] + b"\xff" + data[start + 6 :])


def test_a_damaged_pixel_fails_the_crc(tmp_path, monkeypatch):
    archive, _ = entry(tmp_path, monkeypatch)
    damage_a_pixel(archive)
    calls = []
    pixels = cached_split("toy", SHAPE, generator(calls)).pixels
    assert calls == [1] and pixels.reshape(-1).tolist() == list(range(24))

"""The synthetic-data cache: hits give the same bytes, damage is regenerated, off is off."""

import numpy as np

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
    assert not list(tmp_path.glob("*.partial"))


def test_a_damaged_file_is_regenerated_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOS_CACHE_DIR", str(tmp_path))
    calls = []
    cached_split("toy", (2, 1, 3, 4), generator(calls))
    (stored,) = tmp_path.glob("*.npz")
    stored.write_bytes(stored.read_bytes()[:-20] + bytes(20))
    pixels, _ = cached_split("toy", (2, 1, 3, 4), generator(calls))
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
        found, _ = cached_split("big", shape, lambda: (pixels, labels))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert np.array_equal(found, pixels)
    assert peak < 1.5 * pixels.nbytes, peak

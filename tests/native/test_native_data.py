"""A native workload's data: its fingerprint reads the arrays' bytes where they lie (a
copy of the whole dataset, read once the worker was ready, was counted as its steps'
memory), and is the digest it always was."""

from __future__ import annotations

import hashlib
import tracemalloc

import numpy as np

from topos.native.native_data import NativeData


def _copied_digest(arrays: list[np.ndarray]) -> str:
    digest = hashlib.sha256()
    for array in arrays:
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()[:16]


def test_the_fingerprint_copies_none_of_the_data_and_keeps_its_digest():
    images = np.arange(2_000_000, dtype=np.float32).reshape(500, 4, 1000)  # 8 MB
    labels = (np.arange(500) % 10).astype(np.int64)
    data = NativeData([images, labels], "mine")
    tracemalloc.start()
    try:
        fingerprint = data.fingerprint
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < images.nbytes // 8, f"the fingerprint allocated {peak} bytes"
    assert fingerprint == _copied_digest([images, labels])
    # A view taken in another order is made contiguous first: its digest is of its values.
    transposed = NativeData([images.transpose(1, 0, 2), labels[:4]], "mine")
    assert transposed.fingerprint == _copied_digest(
        [np.ascontiguousarray(images.transpose(1, 0, 2)), labels[:4]]
    )

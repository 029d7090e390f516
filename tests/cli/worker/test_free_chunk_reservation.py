"""Free chunk reservation: once reserved, no free heap chunk serves a request at the mmap
threshold."""

import ctypes
import subprocess
import sys

import pytest

from tests.cli.grading import ROOT, environment

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not hasattr(ctypes.CDLL(None), "mallinfo2"),
    reason="glibc's malloc only",
)

#: What both programs start with (glibc's malloc through ctypes) and end with: the
#: reservation, then whether the next request at the threshold was mapped.
SETUP = """
import ctypes
from topos.system.free_chunk_reservation import reserve_free_chunks


class MallocInfo(ctypes.Structure):
    # glibc's struct mallinfo2: mapped_chunks counts the chunks malloc mapped
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "heap_bytes", "free_chunks", "fast_chunks", "mapped_chunks", "mapped_bytes",
            "unused", "fast_free_bytes", "used_bytes", "free_bytes", "top_releasable_bytes",
        )
    ]


libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = MallocInfo
"""
CHECK = """
taken = reserve_free_chunks(65536)
mapped = libc.mallinfo2().mapped_chunks
pointer = libc.malloc(65536)
print(taken, libc.mallinfo2().mapped_chunks - mapped)
"""

#: Run as a worker runs (its threshold fixed by the environment): free chunks of some
#: 320 KiB are left inside the heap, plugged, and the next request at the threshold mapped.
PROGRAM = (
    SETUP
    + """
small = [libc.malloc(16 * 1024) for _ in range(20)]
barrier = libc.malloc(1024)  # keeps the freed chunks inside the heap, off its top
for pointer in small:
    libc.free(pointer)
"""
    + CHECK
)


def _bytes_taken_and_newly_mapped(program: str) -> tuple[int, int]:
    """Runs `program` as a worker runs (its threshold fixed by the environment); what it
    prints: the bytes reserved, and the chunks the next request at the threshold mapped."""
    completed = subprocess.run(
        [sys.executable, "-c", program],
        cwd=ROOT,
        env=environment(MALLOC_MMAP_THRESHOLD_="65536"),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    taken, newly_mapped = (int(word) for word in completed.stdout.split())
    return taken, newly_mapped


def test_after_plugging_a_request_at_the_threshold_is_mapped():
    taken, newly_mapped = _bytes_taken_and_newly_mapped(PROGRAM)
    assert taken >= 65536 and taken % 65536 == 0
    assert newly_mapped == 1


#: Many free chunks, each five 16 KiB chunks coalesced between barriers: every one is
#: plugged (each judged by its own header, not by walking malloc's lists) and the next
#: request at the threshold is mapped.
MANY = (
    SETUP
    + """
groups = []
for _ in range(300):
    groups.append([libc.malloc(16 * 1024) for _ in range(5)])
    libc.malloc(1024)  # a barrier: the group's chunks coalesce with each other only
for group in groups:
    for pointer in group:
        libc.free(pointer)
"""
    + CHECK
)


def test_hundreds_of_free_chunks_are_all_plugged():
    taken, newly_mapped = _bytes_taken_and_newly_mapped(MANY)
    assert taken >= 300 * 65536
    assert newly_mapped == 1

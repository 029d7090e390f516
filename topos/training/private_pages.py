"""Making a forked child's copies of its parent's written pages its own at once.

After a fork, parent and child share every page until one of them writes it; then the
page is copied, and the copy is private memory of the process that kept the old one.
Both processes touch Python objects (reference counts, free lists) in pages they
share, so a child's private memory would creep up step after step, by pages no plan
says (on cifar10 some 15 KiB a step, 1.4 MiB over 100 steps). So a shard's child,
before its first step, writes every resident page of its small private writable
mappings back onto itself: each becomes its own copy now (counted at ready, in the
route's peak), and no later write of either process copies anything. Large mappings
(a dataset's images, which nobody writes) stay shared.
"""

from __future__ import annotations

import ctypes
import mmap

#: Mappings larger than this stay shared (the brk heap is always made private).
LARGEST_MAPPING = 32 * 1024 * 1024


def own_written_pages() -> int:
    """Writes each resident page of this process's private writable mappings up to
    `LARGEST_MAPPING` back onto itself (same bytes); returns how many bytes it touched.
    Only safe in a single-threaded process (a forked child): a page is read then
    rewritten."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    page = mmap.PAGESIZE
    touched = 0
    with open("/proc/self/maps") as maps:
        lines = maps.readlines()
    for line in lines:
        fields = line.split()
        start, end = (int(part, 16) for part in fields[0].split("-"))
        permissions = fields[1]
        name = fields[5] if len(fields) > 5 else ""
        if permissions[:2] != "rw" or permissions[3] != "p" or name.startswith("[v"):
            continue  # not private and writable, or the vvar/vdso pages
        if name != "[heap]" and end - start > LARGEST_MAPPING:
            continue
        pages = (end - start) // page
        residency = ctypes.create_string_buffer(pages)
        if libc.mincore(ctypes.c_void_p(start), end - start, residency) != 0:
            continue
        for number, flag in enumerate(residency.raw):
            if flag & 1:
                address = start + number * page
                byte = ctypes.c_char.from_address(address)
                byte.value = byte.value
                touched += page
    return touched

"""Making a forked child's copies of its parent's written pages its own at once.

After a fork, parent and child share every page until one of them writes it; then the
page is copied, and the copy is private memory of the process that kept the old one.
Both processes touch Python objects (reference counts, free lists) in pages they
share, so a child's private memory would creep up step after step, by pages no plan
says (on cifar10 some 15 KiB a step, 1.4 MiB over 100 steps). So a shard's child,
before its first step, faults every resident page of its small private writable
mappings in as written (`MADV_POPULATE_WRITE`, Linux 5.14): each becomes its own
copy now (counted at ready, in the route's peak), and no later write of either
process copies anything. Large mappings (a dataset's images, which nobody writes)
stay shared. (Writing each page from Python instead can fault: an allocation during
the walk may unmap a region it is about to write.)
"""

from __future__ import annotations

import ctypes
import mmap

#: Mappings larger than this stay shared (the brk heap is always made private).
LARGEST_MAPPING = 32 * 1024 * 1024

#: madvise's MADV_POPULATE_WRITE (Linux 5.14): fault the pages in as if written, which
#: breaks copy-on-write sharing without changing a byte.
POPULATE_WRITE = 23


def own_written_pages() -> int:
    """Makes each resident page of this process's private writable mappings up to
    `LARGEST_MAPPING` its own copy (one `MADV_POPULATE_WRITE` per run of resident pages,
    which changes no byte; a range unmapped meanwhile is an error, not a fault);
    returns how many bytes it asked for, 0 on a kernel without it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    page = mmap.PAGESIZE
    with open("/proc/self/maps") as maps:
        lines = maps.readlines()
    runs = []
    for line in lines:
        fields = line.split()
        start, end = (int(part, 16) for part in fields[0].split("-"))
        permissions = fields[1]
        name = fields[5] if len(fields) > 5 else ""
        if permissions[:2] != "rw" or permissions[3] != "p" or name.startswith("[v"):
            continue  # not private and writable, or the vvar/vdso pages
        if name != "[heap]" and end - start > LARGEST_MAPPING:
            continue
        residency = ctypes.create_string_buffer((end - start) // page)
        if libc.mincore(start, end - start, residency) != 0:
            continue
        first = None
        for number, flag in enumerate(residency.raw + b"\0"):
            if flag & 1 and first is None:
                first = number
            elif not flag & 1 and first is not None:
                runs.append((start + first * page, (number - first) * page))
                first = None
    touched = 0
    for address, length in runs:
        if libc.madvise(address, length, POPULATE_WRITE) == 0:
            touched += length
        elif ctypes.get_errno() == 22:  # EINVAL: the kernel has no MADV_POPULATE_WRITE
            return 0
    return touched

"""The BLAS kernels that multiply NumPy's matrices in this process, by name: the rule by
which a kernel chooses how to cut or orient its products on the machine it runs on.

OpenBLAS picks its kernels once, when it loads, from the CPU it finds (a Xeon with
AVX-512 gets `SkylakeX`, an AMD EPYC or an Intel without AVX-512 `Haswell` or `Zen`),
and the fastest blocking of a product differs between them: SkylakeX multiplies small
products unpacked, straight from the operands, so cifar10's products ran fastest cut into
small blocks there; the AVX2 kernels pack every product, and the same blocks only cost
them calls (docs/performance/kernel-decisions.md). A choice made here is made by a
rule of the name OpenBLAS reports, never by timing the candidates: a measured choice
would let the noise of one start-up decide a run's bits. For a given machine (and
OpenBLAS build) the name, and so every choice and every bit, is the same in every run;
every route calls the same kernels, so the routes stay bit-identical to each other on
each machine. Across machines the blockings, like BLAS's own sums, may differ: their
products agree to float32 rounding (DESIGN.md, "Bits").
"""

from __future__ import annotations

import functools
from pathlib import Path

#: OpenBLAS's AVX2 kernel families, which pack every single-precision product (no
#: unpacked small-matrix path): `Zen` is the Haswell kernels under another name.
AVX2_KERNELS = frozenset({"haswell", "zen"})


@functools.cache
def blas_kernel() -> str:
    """The kernel family OpenBLAS multiplies NumPy's matrices with, lower case
    (`haswell`, `skylakex`, `zen`, ...), or "" when NumPy's BLAS is not OpenBLAS or does
    not say. Read once a process (a forked shard inherits it): `threadpoolctl` walks the
    loaded libraries, some milliseconds."""
    import numpy  # loads NumPy's BLAS, so threadpoolctl can find it
    from threadpoolctl import threadpool_info

    return numpy_openblas_kernel(threadpool_info(), Path(numpy.__file__).parent)


def numpy_openblas_kernel(pools: list[dict], numpy_directory: Path) -> str:
    """The kernel family of NumPy's OpenBLAS among `threadpoolctl`'s `pools`: the one a
    NumPy wheel ships (in `numpy.libs` beside the package, or inside it) if one is
    loaded, else the first OpenBLAS loaded (NumPy's, since topos imports NumPy before any
    other library with a BLAS of its own); "" when none is OpenBLAS."""
    openblas = [pool for pool in pools if pool.get("internal_api") == "openblas"]
    shipped = (numpy_directory, numpy_directory.with_name("numpy.libs"))
    for pool in openblas:
        path = Path(str(pool.get("filepath", "")))
        if any(directory in path.parents for directory in shipped):
            return str(pool.get("architecture") or "").lower()
    return str(openblas[0].get("architecture") or "").lower() if openblas else ""


def packs_every_product() -> bool:
    """Whether this process's BLAS is one of OpenBLAS's AVX2 kernel families, which
    multiply a product fastest whole rather than in the small blocks SkylakeX's
    unpacked path wants."""
    return blas_kernel() in AVX2_KERNELS

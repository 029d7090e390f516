"""The machine a grade ran on, named precisely enough that two results share a name only
when their figures are comparable: CPU model and the extensions that steer its kernels,
cores, the BLAS and the kernel it chose, NumPy, Python and the operating system.

A grade's figures hold for its machine, so a history groups by these facts and a trend
never mixes machines (`history.grouping_key`); the site names a page after the machine
(`machine_slug`).
"""

from __future__ import annotations

import hashlib
import re

from topos_cli.result.grade_result import GradeResult
from topos_cli.result.worker_facts import Numerics

#: What names a machine, in the order it is said.
MACHINE_FACTS = ("CPU", "flags", "cores", "architecture", "OS", "BLAS", "NumPy", "Python")


def machine_facts(result: GradeResult) -> tuple[tuple[str, str], ...]:
    """The facts that name the machine of `result`, as `(name, value)` pairs (`unknown`
    where an older result does not say)."""
    host = result.host
    numerics = host.numerics or Numerics()
    blas = numerics.blas or {}
    built = " ".join(str(blas.get(key)) for key in ("name", "version") if blas.get(key))
    kernel = numerics.blas_kernel
    blas_text = built or "unknown"
    if kernel:
        blas_text += f" (running {kernel})"
    flags = "unknown" if host.cpu_flags is None else " ".join(host.cpu_flags) or "none"
    python = (host.python or "unknown").split(" ")[0]
    return (
        ("CPU", host.cpu_model or "unknown"),
        ("flags", flags),
        ("cores", f"{host.logical_cores} ({host.available_cores} available)"),
        ("architecture", host.machine or "unknown"),
        ("OS", host.operating_system or host.system or "unknown"),
        ("BLAS", blas_text),
        ("NumPy", str(numerics.numpy or "unknown")),
        ("Python", python),
    )


def machine_name(facts: tuple[tuple[str, str], ...]) -> str:
    """The machine in one line: `AMD EPYC (x86_64; avx avx2 fma), 2 cores (2 available),
    Ubuntu 24.04 LTS, openblas 0.3.27 (running openblas 0.3.27 Haswell), NumPy 2.1.3,
    Python 3.12.4`."""
    named = dict(facts)
    flags = named.get("flags", "unknown")
    cpu = f"{named.get('CPU')} ({named.get('architecture')}; {flags})"
    logical, _, available = str(named.get("cores")).partition(" ")
    cores = f"{logical} cores {available}".strip()
    return (
        f"{cpu}, {cores}, {named.get('OS')}, {named.get('BLAS')}, "
        f"NumPy {named.get('NumPy')}, Python {named.get('Python')}"
    )


def machine_slug(facts: tuple[tuple[str, str], ...]) -> str:
    """A short, stable name for the machine fit for a path: `x86_64-amd-epyc-3f2a91c0`
    (its architecture and CPU in words, and a digest of every fact, so two machines that
    differ in any fact never share a page)."""
    named = dict(facts)
    words = f"{named.get('architecture', '')} {named.get('CPU', '')}".lower()
    readable = re.sub(r"[^a-z0-9]+", "-", words).strip("-")[:40].strip("-") or "machine"
    digest = hashlib.sha256(repr(tuple(facts)).encode("utf-8")).hexdigest()[:8]
    return f"{readable}-{digest}"

"""Facts about the machine a grade ran on, gathered without NumPy.

The parent process stays light, so nothing here imports NumPy or the
library; NumPy's version and BLAS come from a worker's `ready` event. Every
fact is best effort: a missing `/proc`, a missing `git`, or a tree that is
not a repository gives `None`, never an error.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

from topos_cli.result.grade_result import GitFacts, HostFacts

#: The project's root: the folder holding the `topos_cli` package.
PROJECT_DIRECTORY = Path(__file__).resolve().parents[2]


#: The instruction-set extensions that decide which kernels a BLAS and NumPy run, so two
#: machines differing in one compute at different speeds (and may round differently):
#: x86's vector widths and fused multiply-add, ARM's NEON (`asimd`), SVE and matrix units.
MATTERING_FLAGS = frozenset(
    {
        "sse4_2",
        "avx",
        "avx2",
        "fma",
        "f16c",
        "avx512f",
        "avx512cd",
        "avx512bw",
        "avx512dq",
        "avx512vl",
        "avx512_vnni",
        "avx512_bf16",
        "avx512_fp16",
        "avx_vnni",
        "amx_tile",
        "amx_bf16",
        "amx_int8",
        "neon",
        "asimddp",
        "asimdhp",
        "bf16",
        "i8mm",
        "sve",
        "sve2",
        "sme",
    }
)

#: Other spellings of the same extension: aarch64 Linux says `asimd` for NEON, macOS says
#: `AVX1.0`, `SSE4.2`, `AVX512VNNI` and `FEAT_*` for ARM's features.
FLAG_SPELLINGS = {
    "asimd": "neon",
    "advsimd": "neon",
    "avx1.0": "avx",
    "sse4.2": "sse4_2",
    "avx512vnni": "avx512_vnni",
    "avx512bf16": "avx512_bf16",
    "avx512fp16": "avx512_fp16",
    "avxvnni": "avx_vnni",
    "feat_dotprod": "asimddp",
    "feat_fp16": "asimdhp",
    "feat_bf16": "bf16",
    "feat_i8mm": "i8mm",
    "feat_sme": "sme",
}


def _cpuinfo(path: Path) -> str:
    """The text of `/proc/cpuinfo`, or nothing where it is missing (macOS)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _sysctl(*names: str) -> str | None:
    """The values of sysctl `names` (macOS and the BSDs), or None where there is none."""
    if not sys.platform.startswith(("darwin", "freebsd")):
        return None
    try:
        completed = subprocess.run(
            ["sysctl", *names], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    # One name that this CPU lacks fails the command but the others are still printed.
    return completed.stdout or None


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The CPU's model name: `/proc/cpuinfo` on Linux, sysctl on macOS, else `platform`."""
    text = _cpuinfo(cpuinfo)
    # x86 says "model name"; some ARM kernels say "Model" or "Hardware" instead.
    for key in ("model name", "Model", "Hardware", "cpu model"):
        for line in text.splitlines():
            name, _, value = line.partition(":")
            if name.strip() == key and value.strip():
                return value.strip()
    brand = _sysctl("-n", "machdep.cpu.brand_string")
    if brand and brand.strip():
        return brand.strip()
    return platform.processor() or None


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str] | None:
    """The CPU's extensions of `MATTERING_FLAGS`, sorted: from `/proc/cpuinfo`'s `flags`
    (x86) or `Features` (ARM) on Linux, from sysctl on macOS; None where neither says."""
    words: set[str] = set()
    for line in _cpuinfo(cpuinfo).splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            words.update(value.split())
    if not words:
        text = _sysctl("machdep.cpu.features", "machdep.cpu.leaf7_features", "hw.optional")
        for line in (text or "").splitlines():
            name, _, value = line.partition(":")
            name, value = name.strip(), value.strip()
            if name.startswith("machdep.cpu."):
                words.update(value.split())
            elif name.startswith("hw.optional.") and value == "1":
                # hw.optional.neon: 1, hw.optional.arm.FEAT_BF16: 1, hw.optional.avx2_0: 1
                words.add(name.rsplit(".", 1)[-1].removesuffix("_0"))
    if not words:
        return None
    spelled = {FLAG_SPELLINGS.get(word.lower(), word.lower()) for word in words}
    return sorted(spelled & MATTERING_FLAGS)


def operating_system() -> str | None:
    """The operating system by name and release: `Ubuntu 24.04.1 LTS`, `macOS 14.5`."""
    if sys.platform == "darwin":
        release = platform.mac_ver()[0]
        return f"macOS {release}" if release else "macOS"
    try:
        release = platform.freedesktop_os_release()
    except (OSError, AttributeError):  # no os-release file, or Python before 3.10
        return None
    return release.get("PRETTY_NAME") or release.get("NAME")


def logical_cores() -> int | None:
    """How many logical CPUs the machine has."""
    return os.cpu_count()


def available_cores() -> int | None:
    """How many logical CPUs this process may run on (its affinity; a container may have fewer)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


def physical_cores() -> int | None:
    """How many physical cores the machine has, if psutil can tell."""
    try:
        import psutil

        return psutil.cpu_count(logical=False)
    except Exception:  # psutil raises platform-specific errors; the fact is optional
        return None


def load_average() -> tuple[float, float, float] | None:
    """The 1, 5 and 15 minute load averages, where the system keeps them."""
    try:
        one, five, fifteen = os.getloadavg()
    except (AttributeError, OSError):
        return None
    return (one, five, fifteen)


def total_memory_bytes() -> int | None:
    """The machine's physical memory in bytes, if psutil can tell."""
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:  # optional fact, as above
        return None


def python_version() -> str:
    """The running Python's version and implementation, e.g. `3.11.7 (CPython)`."""
    return f"{platform.python_version()} ({platform.python_implementation()})"


def _git(directory: Path, *arguments: str) -> str | None:
    """The stripped output of a git command in `directory`, or `None` if it fails in any way."""
    try:
        completed = subprocess.run(
            ["git", "-C", str(directory), *arguments],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if completed.returncode != 0:
        return None
    return completed.stdout.strip()


def git_commit(directory: Path = PROJECT_DIRECTORY) -> GitFacts | None:
    """The project's commit and whether its tree has uncommitted changes; `None` outside git."""
    commit = _git(directory, "rev-parse", "HEAD")
    if not commit:
        return None
    status = _git(directory, "status", "--porcelain", "--untracked-files=no")
    return GitFacts(commit=commit, dirty=None if status is None else bool(status))


def host_facts(directory: Path = PROJECT_DIRECTORY) -> HostFacts:
    """Every host fact the result records (the workers add their numerics)."""
    loads = load_average()
    return HostFacts(
        cpu_model=cpu_model(),
        cpu_flags=cpu_flags(),
        logical_cores=logical_cores(),
        available_cores=available_cores(),
        physical_cores=physical_cores(),
        load_average=None if loads is None else list(loads),
        memory_bytes=total_memory_bytes(),
        system=f"{platform.system()} {platform.release()}".strip(),
        operating_system=operating_system(),
        machine=platform.machine(),
        python=python_version(),
        python_executable=sys.executable,
        git=git_commit(directory),
        # Where /proc is missing, workers cannot read VmHWM and fall back to sampling.
        proc_filesystem=Path("/proc/self/status").exists(),
    )

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


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The CPU's model name, from `/proc/cpuinfo` on Linux, else from `platform`."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    # x86 says "model name"; some ARM kernels say "Model" or "Hardware" instead.
    for key in ("model name", "Model", "Hardware", "cpu model"):
        for line in text.splitlines():
            name, _, value = line.partition(":")
            if name.strip() == key and value.strip():
                return value.strip()
    return platform.processor() or None


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
        logical_cores=logical_cores(),
        available_cores=available_cores(),
        physical_cores=physical_cores(),
        load_average=None if loads is None else list(loads),
        memory_bytes=total_memory_bytes(),
        system=f"{platform.system()} {platform.release()}".strip(),
        machine=platform.machine(),
        python=python_version(),
        python_executable=sys.executable,
        git=git_commit(directory),
        # Where /proc is missing, workers cannot read VmHWM and fall back to sampling.
        proc_filesystem=Path("/proc/self/status").exists(),
    )

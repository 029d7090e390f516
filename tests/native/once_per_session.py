"""A `topos` run shared by the tests that read it, run once per test session however
pytest-xdist spreads those tests over its workers: a module-scoped fixture runs once per
worker that meets it, and a grade compiling with torch.compile costs half a minute or
more, so the first worker to ask runs it under a lock and records it; a worker asking
later waits on the lock and reads the record."""

from __future__ import annotations

import fcntl
import json
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

#: What a shared run gives back: the process, then what the test read of its files.
Run = tuple[subprocess.CompletedProcess[str], object]


def run_once_per_session(
    factory: pytest.TempPathFactory, name: str, run: Callable[[Path], Run]
) -> Run:
    """`run(directory)` once in the session, in a new directory beside the workers' own
    (in the parent of each worker's base temporary directory; not under xdist, in the
    session's base temporary directory): its process's exit status and output and what
    it read are recorded there as JSON, and every later caller is given the record."""
    base = factory.getbasetemp()
    shared = base.parent if base.name.startswith("popen-gw") else base
    record = shared / f"{name}.json"
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if record.exists():
            told = json.loads(record.read_text())
            completed = subprocess.CompletedProcess(
                told["args"], told["returncode"], told["stdout"], told["stderr"]
            )
            return completed, told["read"]
        # A directory of its own: a caller before this one may have failed in one.
        completed, read = run(Path(tempfile.mkdtemp(prefix=f"{name}-", dir=shared)))
        told = {
            "args": [str(argument) for argument in completed.args],
            "returncode": completed.returncode,
            "stdout": completed.stdout,
            "stderr": completed.stderr,
            "read": read,
        }
        record.write_text(json.dumps(told))
        return completed, read

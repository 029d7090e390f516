"""The one spelling of the `topos grade` a benchmark runs: as a user runs it, in a
subprocess of this interpreter (`python -m topos_cli.console_script grade`), its output
discarded, and the result JSON it writes read back. Nothing in benchmarks/ imports the
command (an import-linter contract forbids it); each benchmark that grades calls this.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def grade_command(arguments: Sequence[str], result: Path) -> list[str]:
    """The command line of a grade with `arguments` that writes its result to `result`."""
    return [
        sys.executable,
        "-m",
        "topos_cli.console_script",
        "grade",
        *arguments,
        "--json",
        str(result),
    ]


def run_grade(
    arguments: Sequence[str],
    result: Path,
    *,
    environment: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    check: bool = False,
) -> tuple[float, dict[str, Any]]:
    """Runs a grade with `arguments` (`grade_command`), its output discarded; returns the
    wall seconds it took and its result JSON, `{}` when it wrote none. A result left at
    `result` by an earlier grade is removed first, never read as this one's. `check`
    raises `subprocess.CalledProcessError` on a nonzero exit status."""
    result.unlink(missing_ok=True)
    began = time.perf_counter()
    subprocess.run(
        grade_command(arguments, result),
        cwd=cwd,
        env=None if environment is None else dict(environment),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=check,
    )
    seconds = time.perf_counter() - began
    return seconds, json.loads(result.read_text()) if result.exists() else {}


if __name__ == "__main__":
    from benchmarks.catalogue import describe

    raise SystemExit(describe("grade_command", __doc__))

"""Helpers for tests that run `topos` as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

#: The project's root, put on the workers' PYTHONPATH so `tests.cli.tiny_workloads` imports.
ROOT = Path(__file__).resolve().parents[2]

#: How a test names a workload of `tests/cli/tiny_workloads.py`.
TINY = "tests.cli.tiny_workloads:"

#: Run `topos` exactly as the console script does, whichever interpreter runs the tests.
TOPOS = [sys.executable, "-m", "topos_cli.console_script"]


def environment(**extra: str) -> dict[str, str]:
    """This process's environment with the project on PYTHONPATH, plain output, and `extra`."""
    variables = dict(os.environ)
    variables["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [variables.get("PYTHONPATH")])]
    )
    variables.pop("NO_COLOR", None)
    variables.pop("TOPOS_DEBUG", None)
    variables.update(extra)
    return variables


def topos(
    *arguments: str, cwd: Path, timeout: float = 60.0, **extra: str
) -> subprocess.CompletedProcess[str]:
    """Runs `topos ARGUMENTS` in `cwd` and returns what it did."""
    return subprocess.run(
        [*TOPOS, *arguments],
        cwd=cwd,
        env=environment(**extra),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def start_topos(
    *arguments: str, cwd: Path, stdout: int | None = subprocess.PIPE, **extra: str
) -> subprocess.Popen[str]:
    """Starts `topos ARGUMENTS` in `cwd`, its standard error piped (and its standard output,
    unless told otherwise), for a test that signals it or reads it while it runs."""
    return subprocess.Popen(
        [*TOPOS, *arguments],
        cwd=cwd,
        env=environment(**extra),
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
    )


def graded(
    workload: str,
    cwd: Path,
    *arguments: str,
    steps: int,
    name: str = "result.json",
    timeout: float = 60.0,
    **extra: str,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """`topos grade --workload WORKLOAD --steps STEPS --json cwd/NAME ARGUMENTS` in `cwd`;
    returns the process and the result it wrote (None where it wrote none)."""
    result_path = cwd / name
    completed = topos(
        "grade",
        "--workload",
        workload,
        "--steps",
        str(steps),
        "--json",
        str(result_path),
        *arguments,
        cwd=cwd,
        timeout=timeout,
        **extra,
    )
    result = json.loads(result_path.read_text()) if result_path.exists() else None
    return completed, result


def grade_tiny(
    workload: str, cwd: Path, *arguments: str, steps: int = 6, **extra: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """Grades a tiny workload, writing `cwd/result.json`; returns the process and the JSON."""
    return graded(TINY + workload, cwd, *arguments, steps=steps, **extra)


def succeeded(
    *arguments: str, cwd: Path, timeout: float = 60.0, name: str = "result.json"
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Runs `topos ARGUMENTS --json cwd/NAME`, which must exit 0 (its standard error shown
    otherwise); returns the process and the result it wrote."""
    result_path = cwd / name
    completed = topos(*arguments, "--json", str(result_path), cwd=cwd, timeout=timeout)
    assert completed.returncode == 0, completed.stderr
    return completed, json.loads(result_path.read_text())


def one_line_error(completed: subprocess.CompletedProcess[str]) -> str:
    """The single `topos: error:` line of a failed run's stderr (asserting it is alone)."""
    lines = [line for line in completed.stderr.splitlines() if line.startswith("topos: error:")]
    assert len(lines) == 1, completed.stderr
    assert "Traceback" not in completed.stderr, completed.stderr
    return lines[0]

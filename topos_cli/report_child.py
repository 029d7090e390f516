"""A grade's report, drawn beside its result by a short child process once the result is
written.

The grading parent never imports NumPy or the library (matplotlib imports
NumPy), and a report that fails to draw (matplotlib missing or broken, a
timeout, a full disk) must never lose the result or change the grade's exit
status: so the page is drawn by `python -m topos_cli.display.report_html`
in a process of its own, and a failure is one warning line.
`TOPOS_REPORT=off` skips it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TextIO

#: How long the child may take to draw the report before it is given up on.
REPORT_TIMEOUT_SECONDS = 120.0

#: The environment variable that turns the report off (`off`, `0`, `no` or `false`).
REPORT_VARIABLE = "TOPOS_REPORT"


def default_report_path(result_path: str | os.PathLike[str]) -> Path:
    """Where a result's report goes by default: beside it, `.json` replaced by `.html`."""
    path = Path(result_path)
    return path.with_suffix(".html") if path.suffix == ".json" else Path(f"{path}.html")


def reports_wanted() -> bool:
    """Whether a grade draws its report (unless `TOPOS_REPORT` says off)."""
    value = os.environ.get(REPORT_VARIABLE, "").strip().lower()
    return value not in ("off", "0", "no", "false")


def draw_report_in_child(
    result_path: str | os.PathLike[str],
    stderr: TextIO,
    timeout: float = REPORT_TIMEOUT_SECONDS,
) -> Path | None:
    """Draws the report of the result at `result_path` beside it, in a child process.

    Returns the report's path, or `None` after writing one warning line to
    `stderr` when it could not be drawn; never raises for a drawing failure.
    """
    report_path = default_report_path(result_path)
    command = [
        sys.executable,
        "-m",
        "topos_cli.display.report_html",
        str(result_path),
        "--html",
        str(report_path),
    ]
    environment = {**os.environ, "MPLBACKEND": "Agg"}
    try:
        completed = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env=environment,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        reason = f"it took longer than {timeout:g} s"
    except OSError as error:
        reason = f"the drawing process could not start: {error.strerror or error}"
    else:
        if completed.returncode == 0:
            return report_path
        lines = [line for line in completed.stderr.splitlines() if line.strip()]
        reason = (
            lines[-1].removeprefix("topos: error: ")
            if lines
            else (f"the drawing process ended with status {completed.returncode}")
        )
    stderr.write(
        f"topos: warning: the report could not be drawn ({reason}); the result is intact, "
        f"and `topos report {result_path}` can draw it later\n"
    )
    return None

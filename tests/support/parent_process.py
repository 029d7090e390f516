"""What the grading parent may load: the library's NumPy-free modules (`topos.names`,
`topos.budget_text`, which reads `--budget`, `topos.system`, the helpers both sides
share, and `topos.measurement`, the statistics the judge reads), never NumPy, matplotlib
or the rest of the library. Tests run a statement in a fresh interpreter and ask what it
loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: Appended to a script: prints the heavy modules it loaded, as a sorted list.
REPORT_LOADED = (
    "\nimport sys as _sys\n"
    "print('loaded', sorted(name for name in _sys.modules if name in ('numpy', 'matplotlib') or "
    "name.startswith('topos.') and name not in ('topos.names', 'topos.budget_text') "
    "and name.partition('.')[2].partition('.')[0] not in ('system', 'measurement')), "
    "file=_sys.stderr)\n"
)


def heavy_modules_loaded(
    script: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> tuple[str, subprocess.CompletedProcess[str]]:
    """Runs `script` in a fresh interpreter; returns the line naming the NumPy, matplotlib
    and library modules it loaded beyond the NumPy-free ones (`loaded []` when none), and
    the process."""
    completed = subprocess.run(
        [sys.executable, "-c", script + REPORT_LOADED],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        check=False,
    )
    lines = completed.stderr.strip().splitlines()
    return (lines[-1] if lines else ""), completed

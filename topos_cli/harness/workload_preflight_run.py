"""Running the workload preflight (`topos_cli.worker.workload_preflight`) from the
grading parent, which never imports NumPy: a user's workload is recorded once in a
child before any worker starts, and a mistake in its code refuses the grade (exit 2)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys

from topos.names import BUILT_IN_WORKLOADS
from topos_cli.shared.errors import ToposUsageError
from topos_cli.shared.exit_status import ExitStatus
from topos_cli.shared.parent_death import dies_with_parent


def preflight_workload(workload: str, data: str | None) -> str | None:
    """The workload's own name, as its code gives it (`None` when the child could not
    tell, or for a built-in, whose name is `workload`); raises `ToposUsageError` with the
    child's one line when the code of `workload` (not a built-in: those are topos's own
    code) raises as it is loaded, recorded and fed."""
    if workload in BUILT_IN_WORKLOADS:
        return None
    command = [sys.executable, "-m", "topos_cli.worker.workload_preflight", workload]
    if data is not None:
        command.append(data)
    # Killed by the kernel should the grade die first: no child outlives the grade.
    completed = subprocess.run(
        command, capture_output=True, text=True, check=False, preexec_fn=dies_with_parent()
    )
    if completed.returncode == ExitStatus.USAGE:
        from topos_cli.worker.workload_preflight import PREFIX

        lines = [line for line in completed.stderr.splitlines() if line.startswith(PREFIX)]
        message = lines[-1].removeprefix(PREFIX) if lines else completed.stderr.strip()
        raise ToposUsageError(message)
    # Anything else the workers meet again and report as they always have.
    return _name(completed.stdout)


def _name(output: str) -> str | None:
    """The name the child printed, if it printed one."""
    for line in reversed(output.splitlines()):
        with contextlib.suppress(ValueError):
            told = json.loads(line)
            if isinstance(told, dict) and isinstance(told.get("name"), str):
                return told["name"]
    return None

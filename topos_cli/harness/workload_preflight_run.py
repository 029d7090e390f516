"""Running the workload preflight (`topos_cli.worker.workload_preflight`) from the
grading parent, which never imports NumPy: a user's workload is recorded once in a
child before any worker starts, and a mistake in its code refuses the grade (exit 2)."""

from __future__ import annotations

import subprocess
import sys

from topos.names import BUILT_IN_WORKLOADS
from topos_cli.shared.errors import ToposUsageError
from topos_cli.shared.exit_status import ExitStatus
from topos_cli.shared.parent_death import dies_with_parent


def preflight_workload(workload: str, data: str | None) -> None:
    """Raises `ToposUsageError` with the child's one line when the code of `workload`
    (not a built-in: those are topos's own code) raises as it is loaded, recorded and fed."""
    if workload in BUILT_IN_WORKLOADS:
        return
    command = [sys.executable, "-m", "topos_cli.worker.workload_preflight", workload]
    if data is not None:
        command.append(data)
    # Killed by the kernel should the grade die first: no child outlives the grade.
    completed = subprocess.run(
        command, capture_output=True, text=True, check=False, preexec_fn=dies_with_parent()
    )
    if completed.returncode != ExitStatus.USAGE:
        return  # anything else the workers meet again and report as they always have
    from topos_cli.worker.workload_preflight import PREFIX

    lines = [line for line in completed.stderr.splitlines() if line.startswith(PREFIX)]
    raise ToposUsageError(lines[-1].removeprefix(PREFIX) if lines else completed.stderr.strip())

"""Running the workload preflight (`topos_cli.worker.workload_preflight`) from the
grading parent, which never imports NumPy: a user's workload is recorded once in a
child before any worker starts, and a mistake in its code refuses the grade (exit 2).
The child also says which code it imported, which `grade --against` needs."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from dataclasses import dataclass

import msgspec

from topos.names import BUILT_IN_WORKLOADS
from topos_cli.result.worker_facts import CodeFacts
from topos_cli.shared.errors import ToposUsageError
from topos_cli.shared.exit_status import ExitStatus
from topos_cli.shared.parent_death import dies_with_parent


@dataclass(frozen=True)
class PreflightOutcome:
    """What the preflight told: the workload's own name, and the code it imported
    (each `None` when the child could not tell)."""

    name: str | None = None
    code: CodeFacts | None = None
    #: A native workload's framework (`torch`), its routes and default routes; `None`
    #: and empty for topos's workloads.
    framework: str | None = None
    routes: tuple[str, ...] = ()
    default_routes: tuple[str, ...] = ()
    #: What a native frontier grades beside a PyTorch step's budgets unless told.
    frontier_references: tuple[str, ...] = ()


def preflight_workload(
    workload: str, data: str | None, *, code_wanted: bool = False
) -> PreflightOutcome:
    """The workload's own name, as its code gives it (`None` when the child could not
    tell, or for a built-in, whose name is `workload`), and the code it imported; raises
    `ToposUsageError` with the child's one line when the code of `workload` (not a
    built-in: those are topos's own code) raises as it is loaded, recorded and fed.

    A built-in is not looked at, unless `code_wanted` (`--against`): then the child only
    resolves it, to say where topos and its module were imported from."""
    built_in = workload in BUILT_IN_WORKLOADS
    if built_in and not code_wanted:
        return PreflightOutcome()
    command = [sys.executable, "-m", "topos_cli.worker.workload_preflight"]
    command += ["--where", workload] if built_in else [workload]
    if data is not None and not built_in:
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
    told = _told(completed.stdout)
    name = told.get("name")
    code = told.get("code")
    framework = told.get("framework")
    return PreflightOutcome(
        name=None if built_in or not isinstance(name, str) else name,
        code=_code(code),
        framework=framework if isinstance(framework, str) else None,
        routes=_names(told.get("routes")),
        default_routes=_names(told.get("default_routes")),
        frontier_references=_names(told.get("frontier_references")),
    )


def _names(told: object) -> tuple[str, ...]:
    """A list of names the child told, as a tuple (empty if it told no such list)."""
    if not isinstance(told, list):
        return ()
    return tuple(name for name in told if isinstance(name, str))


def _told(output: str) -> dict[str, object]:
    """The JSON object the child printed last, if it printed one."""
    for line in reversed(output.splitlines()):
        with contextlib.suppress(ValueError):
            told = json.loads(line)
            if isinstance(told, dict):
                return told
    return {}


def _code(told: object) -> CodeFacts | None:
    """The code facts the child told, if they read as such."""
    if not isinstance(told, dict):
        return None
    try:
        return CodeFacts.from_json(told)
    except msgspec.ValidationError:  # a child that says something else is no evidence
        return None

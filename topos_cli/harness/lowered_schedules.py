"""Remat lowered once, before any worker, where its search costs the route nothing.

Lowering remat under a budget is a search (the ladder's walks, the floor's bisection,
each schedule's arena placement): seconds and megabytes of heap a worker would spend
before it is ready, counted in the route's ready time and RSS (a GRU at its default
budget: 4.2x recorded's ready time, 16 MiB over its RSS). The grading parent never
imports NumPy, so a child (`topos_cli.worker.remat_plans`, with the workers'
environment) records the workload as a worker would, lowers remat under each budget
and writes the schedule each lowering chose to a file in the grade's temporary
directory; each remat worker of this checkout rebuilds its plan from that file
(`Entry.lower_schedule`, the same plan), and says the child's seconds at ready. When
the child cannot tell (the workload fails to load, a budget is below the floor, the
child times out), the workers search as before: they say what is wrong.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from topos_cli.shared.parent_death import dies_with_parent
from topos_cli.worker.remat_plans import DEFAULT_BUDGET_WORD

if TYPE_CHECKING:
    from topos_cli.harness.grade_preparation import PreparedGrade


@dataclass(frozen=True)
class PlannedRemat:
    """What the planning child told: each budget's plan fingerprint (`plans`) and the
    file its lowered schedule was written to (`schedules`), for the budgets it lowered."""

    plans: dict[str, str] = field(default_factory=dict)
    schedules: dict[str, str] = field(default_factory=dict)


def plan_remat(
    workload: str,
    data: str | None,
    budgets: Sequence[str],
    directory: str | None = None,
    environment: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> PlannedRemat:
    """Runs the planning child once over `budgets` (writing their schedules into
    `directory`, if given); empty where it could not tell."""
    command = [sys.executable, "-m", "topos_cli.worker.remat_plans", workload, data or "-"]
    if directory is not None:
        command += ["--write", directory]
    try:
        completed = subprocess.run(
            [*command, *budgets],
            capture_output=True,
            text=True,
            check=False,
            env=None if environment is None else dict(environment),
            timeout=timeout,
            # Killed by the kernel should the grade die first: no child outlives it.
            preexec_fn=dies_with_parent(),
        )
    except subprocess.TimeoutExpired:
        return PlannedRemat()
    if completed.returncode != 0:
        return PlannedRemat()
    return _told(completed.stdout)


def with_lowered_schedules(preparation: PreparedGrade, directory: str) -> PreparedGrade:
    """`preparation` with each remat run of this checkout given the file of the schedule its
    budget lowers to (`--remat-schedule`), lowered by the planning child into
    `directory`; `preparation` itself when it has no such run or the child could not tell.
    (A run of `--against`'s checkout lowers its own: its engine may differ.)"""
    own = [r for r in preparation.requests if r.route == "remat" and r.checkout is None]
    if not own:
        return preparation
    budgets = list(dict.fromkeys(r.budget or DEFAULT_BUDGET_WORD for r in own))
    planned = plan_remat(
        preparation.options.workload,
        preparation.data,
        budgets,
        directory,
        preparation.environment,
        timeout=preparation.options.timeout,
    )
    return attach_schedules(preparation, planned)


def attach_schedules(preparation: PreparedGrade, planned: PlannedRemat) -> PreparedGrade:
    """`preparation` with each remat run of this checkout given its budget's schedule file,
    where `planned` holds one."""
    requests = []
    for request in preparation.requests:
        path = None
        if request.route == "remat" and request.checkout is None:
            path = planned.schedules.get(request.budget or DEFAULT_BUDGET_WORD)
        requests.append(request if path is None else replace(request, remat_schedule=path))
    return replace(preparation, requests=requests)


def _told(output: str) -> PlannedRemat:
    """What the child printed on its last JSON line (only the strings)."""
    for line in reversed(output.splitlines()):
        try:
            told = json.loads(line)
        except ValueError:
            continue
        if not isinstance(told, dict) or not isinstance(told.get("plans"), dict):
            continue
        schedules = told.get("schedules") if isinstance(told.get("schedules"), dict) else {}
        return PlannedRemat(
            {key: value for key, value in told["plans"].items() if isinstance(value, str)},
            {key: value for key, value in schedules.items() if isinstance(value, str)},
        )
    return PlannedRemat()

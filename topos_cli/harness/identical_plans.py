"""A frontier's budgets grouped by the plan they lower to, so one plan is graded once.

The grading parent never imports NumPy: `topos_cli.worker.remat_plans` lowers remat
under every budget in a child, with the workers' environment, and tells each plan's
fingerprint. Budgets with one fingerprint are one point, graded once under the first of
them and labelled with them all (`remat@floor+25%=floor`). A budget the child refuses
(below the floor), or every budget when the child cannot tell, is graded on its own, as
before: its worker says what is wrong.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence

from topos_cli.shared.parent_death import dies_with_parent

#: What joins the budgets of one point in its label.
SAME_PLAN = "="


def budget_groups(
    workload: str,
    data: str | None,
    budgets: Sequence[str],
    environment: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> list[tuple[str, ...]]:
    """`budgets` in groups whose plans are the same, each group in order of its first
    budget, each budget in one group (alone where nothing is known of its plan)."""
    if len(budgets) < 2:
        return [(budget,) for budget in budgets]
    command = [sys.executable, "-m", "topos_cli.worker.remat_plans", workload, data or "-"]
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
        return [(budget,) for budget in budgets]
    plans = _told_plans(completed.stdout) if completed.returncode == 0 else {}
    groups: dict[str, list[str]] = {}
    for budget in budgets:
        fingerprint = plans.get(budget)
        groups.setdefault(fingerprint or f"alone:{budget}", []).append(budget)
    return [tuple(group) for group in groups.values()]


def group_label(group: Sequence[str]) -> str:
    """The budget part of a point's label: every budget it stands for (`floor+25%=floor`)."""
    return SAME_PLAN.join(group)


def _told_plans(output: str) -> dict[str, str]:
    """The fingerprints the child printed, by budget (only the strings)."""
    for line in reversed(output.splitlines()):
        try:
            told = json.loads(line)
        except ValueError:
            continue
        plans = told.get("plans") if isinstance(told, dict) else None
        if isinstance(plans, dict):
            return {key: value for key, value in plans.items() if isinstance(value, str)}
    return {}

"""A frontier's budgets grouped by the plan they lower to, so one plan is graded once.

The grading parent never imports NumPy: `topos_cli.worker.remat_plans` lowers remat
under every budget in a child, with the workers' environment, and tells each plan's
fingerprint. Budgets with one fingerprint are one point, graded once under the first of
them and labelled with them all (`remat@floor+25%=floor`). A budget the child refuses
(below the floor), or every budget when the child cannot tell, is graded on its own, as
before: its worker says what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

#: What joins the budgets of one point in its label.
SAME_PLAN = "="


def groups_of(budgets: Sequence[str], plans: Mapping[str, str]) -> list[tuple[str, ...]]:
    """`budgets` in groups whose plans are the same by the fingerprints `plans` holds
    (`plan_remat`'s), each group in order of its first budget, each budget in one group
    (alone where nothing is known of its plan)."""
    groups: dict[str, list[str]] = {}
    for budget in budgets:
        fingerprint = plans.get(budget)
        groups.setdefault(fingerprint or f"alone:{budget}", []).append(budget)
    return [tuple(group) for group in groups.values()]


def group_label(group: Sequence[str]) -> str:
    """The budget part of a point's label: every budget it stands for (`floor+25%=floor`)."""
    return SAME_PLAN.join(group)

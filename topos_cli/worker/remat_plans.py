"""Which of a frontier's budgets lower to the same plan, told by a child process.

`topos frontier` grades remat once per budget, each in a worker of its own. Two
budgets may name one plan (`floor` and the floor's bytes; on a small graph whose floor
is recorded's plan, every budget), and grading it twice measures one plan twice and
reports page noise as a difference. Before any worker starts, the grading parent (which
never imports NumPy) runs this once: it records the workload's recorded route as a
worker would (its dataset, fitted, one shard's rows), lowers remat under each budget,
and prints, per budget, a fingerprint of the plan (its schedule: every evaluation's
node, operands and whether it is a recomputation; and its planned bytes), or null for a
budget the route refuses (below the floor: the worker says so).

    python -m topos_cli.worker.remat_plans WORKLOAD DATA|- BUDGET...
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from typing import Any

from topos_cli.shared.exit_status import ExitStatus


def plan_fingerprint(plan: Any) -> str:
    """A fingerprint of a remat plan: its schedule's evaluations (node, operands,
    recomputation) and its planned bytes. Two plans with one fingerprint evaluate the
    same nodes in the same order into as many bytes: one point of a frontier."""
    evaluations = tuple(
        (evaluation.node, tuple(evaluation.inputs), bool(evaluation.recomputation))
        for evaluation in plan.schedule.evaluations
    )
    text = repr((evaluations, plan.planned_bytes))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fingerprints(workload_name: str, data: str | None, budgets: Sequence[str]) -> dict:
    """Each budget's plan fingerprint (`plan_fingerprint`), None where it is refused."""
    from topos.errors import BudgetError
    from topos.training import RouteProgram
    from topos.workloads import resolve

    workload = resolve(workload_name)
    workload = workload.fitted(workload.dataset(data))
    program = RouteProgram(workload, "recorded", shard_processes=False)
    told: dict[str, str | None] = {}
    try:
        for budget in budgets:
            try:
                told[budget] = plan_fingerprint(program.remat_plan(budget))
            except BudgetError:
                told[budget] = None
    finally:
        program.close()
    return told


def main(argv: list[str] | None = None) -> int:
    """Prints `{"plans": {budget: fingerprint or null}}` as one JSON line; exit 1 (and
    nothing printed) when the workload cannot be lowered: its workers say why."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    workload, data, *budgets = arguments
    try:
        told = fingerprints(workload, None if data == "-" else data, budgets)
    except Exception as error:  # the workers meet it again and report it as they do
        sys.stderr.write(f"remat plans not compared: {type(error).__name__}: {error}\n")
        return 1
    sys.stdout.write(json.dumps({"plans": told}) + "\n")
    return ExitStatus.OK


if __name__ == "__main__":
    sys.exit(main())

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

    python -m topos_cli.worker.remat_plans WORKLOAD DATA|- [--write DIR] BUDGET...

With `--write DIR` it also writes, per budget, the schedule the lowering chose
(`RematPlan.lowered_schedule`) to a file in DIR and prints its path: a grade runs this
before its workers, and each remat worker rebuilds its plan from that file rather than
searching again (the search's seconds and heap spent here, where they cost the route
nothing). `default` is remat's default budget (`DEFAULT_BUDGET`).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from topos.system.atomic_file import write_bytes_atomically
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


#: The budget word for remat's default budget (what a grade without `--budget` runs).
DEFAULT_BUDGET_WORD = "default"


def fingerprints(
    workload_name: str,
    data: str | None,
    budgets: Sequence[str],
    directory: str | None = None,
) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """Each budget's plan fingerprint (`plan_fingerprint`), None where it is refused;
    and with `directory`, the file each budget's lowered schedule was written to."""
    from topos.errors import BudgetError
    from topos.training import RouteProgram
    from topos.training.route_program import DEFAULT_BUDGET
    from topos.workloads import resolve

    workload = resolve(workload_name)
    workload = workload.fitted(workload.dataset(data))
    program = RouteProgram(workload, "recorded", shard_processes=False)
    told: dict[str, str | None] = {}
    written: dict[str, str | None] = {}
    try:
        for number, budget in enumerate(budgets):
            asked = DEFAULT_BUDGET if budget == DEFAULT_BUDGET_WORD else budget
            try:
                plan = program.remat_plan(asked)
            except BudgetError:
                told[budget] = written[budget] = None
                continue
            told[budget] = plan_fingerprint(plan)
            if directory is not None:
                path = Path(directory) / f"remat-schedule-{number}.json"
                text = plan.lowered_schedule().to_text()
                write_bytes_atomically(path, text.encode("utf-8"))
                written[budget] = str(path)
            del plan  # its compiled steps: the next budget's search needs the room
    finally:
        program.close()
    return told, written


def main(argv: list[str] | None = None) -> int:
    """Prints `{"plans": {budget: fingerprint or null}, "schedules": {budget: path or
    null}}` as one JSON line; exit 1 (and nothing printed) when the workload cannot be
    lowered: its workers say why."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    workload, data, *budgets = arguments
    directory = None
    if budgets[:1] == ["--write"]:
        directory, budgets = budgets[1], budgets[2:]
    try:
        told, written = fingerprints(workload, None if data == "-" else data, budgets, directory)
    except Exception as error:  # the workers meet it again and report it as they do
        sys.stderr.write(f"remat plans not compared: {type(error).__name__}: {error}\n")
        return 1
    sys.stdout.write(json.dumps({"plans": told, "schedules": written}) + "\n")
    return ExitStatus.OK


if __name__ == "__main__":
    sys.exit(main())

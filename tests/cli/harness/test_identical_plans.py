"""A frontier grades one plan once: budgets whose lowered plans are the same schedule
into as many bytes are one point, told by a child process (the grading parent never
imports NumPy)."""

from __future__ import annotations

import re

from tests.cli.grading import TINY, succeeded, topos
from topos_cli.harness.identical_plans import group_label, groups_of
from topos_cli.harness.lowered_schedules import plan_remat


def test_two_spellings_of_the_floor_are_one_plan_on_a_built_in():
    from topos.training import RouteProgram
    from topos.workloads import resolve

    program = RouteProgram(resolve("mnist"), "remat", "floor")
    floor = program.plan.planned_bytes * program.shards
    program.close()
    budgets = ["floor", "100%", f"{floor}B", "1B"]
    groups = groups_of(budgets, plan_remat("mnist", None, budgets).plans)
    # 1B is below the floor: nothing is known of its plan, so it is graded (and refused)
    # on its own.
    assert groups == [("floor", f"{floor}B"), ("100%",), ("1B",)]
    assert group_label(groups[0]) == f"floor={floor}B"


def test_a_user_model_whose_floor_is_recorded_plan_is_one_point(tmp_path):
    # The user's two-layer perceptron plans no less than recorded does at any budget:
    # the default five budgets are one plan, graded once, not five points of page noise.
    completed, result = succeeded(
        "frontier",
        "--workload",
        TINY + "tiny",
        "--steps",
        "2",
        cwd=tmp_path,
        timeout=120.0,
        name="frontier.json",
    )
    budgets = result["frontier"]["budgets"]
    assert len(budgets) == 5
    label = "remat@" + "=".join(budgets)
    assert result["frontier"]["points"] == ["engine", "recorded", label]
    assert result["frontier"]["same_plans"] == [budgets]
    # The table's rows: a point's name, then its cells two spaces or more apart (a note
    # such as "remat@...=floor time inconclusive: ..." may also start with the name,
    # when it is the only route whose time was inconclusive).
    rows = re.findall(r"^(remat@\S+) {2,}", completed.stdout, flags=re.MULTILINE)
    assert rows == [label]
    # `topos report` on the frontier's result draws the frontier, this point in it.
    report = topos("report", "frontier.json", "--html", "report.html", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "report.html").read_text()
    assert '<figure id="frontier-figure"><svg' in page
    assert f"<td>{label}</td>" in page

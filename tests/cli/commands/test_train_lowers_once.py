"""`topos train --route remat` records and lowers its route once: it lowered a program
first only to check the workload could be, and then Training lowered its own, so remat's
search (a floor bisection at the default budget) ran twice before the first step."""

from __future__ import annotations

from typer.testing import CliRunner

from tests.cli.grading import TINY
from topos.engine import remat_plan
from topos_cli.app import application


def test_train_on_the_remat_route_lowers_one_remat_plan(monkeypatch):
    lowered = []
    original = remat_plan.RematPlan.__init__

    def counted(self, *arguments, **keywords):
        lowered.append(self)
        original(self, *arguments, **keywords)

    monkeypatch.setattr(remat_plan.RematPlan, "__init__", counted)
    result = CliRunner().invoke(
        application,
        ["train", "--workload", TINY + "tiny", "--route", "remat", "--steps", "2"],
    )
    assert result.exit_code == 0, result.output
    assert len(lowered) == 1
    assert any(line.startswith("budget: ") for line in result.output.splitlines())


def test_train_still_says_a_budget_below_the_floor_in_one_line():
    result = CliRunner().invoke(
        application,
        ["train", "--workload", TINY + "tiny", "--route", "remat", "--budget", "1B"],
    )
    assert result.exit_code == 2
    assert "below this plan's floor" in result.output
    assert "Traceback" not in result.output

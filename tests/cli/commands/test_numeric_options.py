"""Every number on a command line is bounded and read in the parent, before any worker:
one line naming the option, exit 2, never an internal error."""

from __future__ import annotations

import pytest

from tests.cli.grading import one_line_error, topos
from topos_cli.commands.options import distinct_budgets
from topos_cli.harness.grade_preparation import GradeOptions, prepare
from topos_cli.shared.bounds import check_count
from topos_cli.shared.errors import ToposUsageError

NINES = "9" * 400


def test_a_frontier_grades_each_budget_once_however_it_is_spelled():
    assert distinct_budgets(["floor", "FLOOR", " Floor "]) == ("floor",)
    assert distinct_budgets(["50%", "50.0%", "64MiB", "67108864B", "floor"]) == (
        "50%",
        "64MiB",
        "floor",
    )


def test_too_many_frontier_budgets_are_refused():
    with pytest.raises(ToposUsageError, match="--budgets"):
        distinct_budgets([f"{n}%" for n in range(1, 500)])


@pytest.mark.parametrize(
    ("field", "value", "option"),
    [
        ("repeat", 100_000_000, "--repeat"),
        ("steps", 10**400, "--steps"),
        ("threads", 100_000, "--threads"),
        ("timeout", float("nan"), "--timeout"),
        ("budget", NINES + "MiB", "--budget"),
        ("budgets", (NINES + "%",), "--budget"),
    ],
)
def test_grade_refuses_a_number_out_of_bounds_before_planning(field, value, option):
    with pytest.raises(ToposUsageError, match=option):
        prepare(GradeOptions(workload="mnist", routes=("engine", "remat"), **{field: value}))


def test_a_huge_count_is_not_printed_whole():
    with pytest.raises(ToposUsageError) as caught:
        check_count("--steps", 10**400, most=10)
    assert len(str(caught.value)) < 100


@pytest.mark.parametrize(
    "arguments",
    [
        ["describe", "--route", "remat", "--budget", NINES + "MiB", "--summary"],
        ["describe", "--route", "remat", "--budget", NINES + "%", "--summary"],
        ["train", "--route", "remat", "--budget", NINES + "%", "--steps", "1"],
        ["train", "--steps", "100000000"],
        ["frontier", "--budgets", f"50%,{NINES}%"],
        ["grade", "--repeat", "100000000"],
        ["check", "--directions", "100000000"],
        ["check", "--seed", str(2**64)],
    ],
)
def test_every_command_refuses_numbers_out_of_bounds_in_one_line(tmp_path, arguments):
    completed = topos(*arguments, cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    one_line_error(completed)
    assert "internal error" not in completed.stderr


def test_check_names_its_own_route_option(tmp_path):
    completed = topos("check", "--route", "engine,engine", cwd=tmp_path)
    message = one_line_error(completed)
    assert completed.returncode == 2
    assert "--route;" in message and "--routes" not in message and "--repeat" not in message

"""Budget text, as `--budget` takes it: bytes with a unit, a percentage, or the floor;
anything else refused in one line. Read without NumPy, as the grading parent needs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from topos.budget_text import BudgetTextError, parse_budget


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("50%", 0.5),
        (" 35 % ", 0.35),
        ("100%", 1.0),
        ("floor", "floor"),
        ("FLOOR", "floor"),
        ("64MiB", 64 * 2**20),
        ("6.5MB", 6_500_000),
        ("7000000B", 7_000_000),
        ("1 GiB", 2**30),
        ("512kib", 512 * 1024),
        ("floor+50%", ("floor", 0.5)),
        ("Floor + 25%", ("floor", 0.25)),
        ("floor+0%", ("floor", 0.0)),
        ("floor+100%", ("floor", 1.0)),
    ],
)
def test_budgets_people_write(text: str, expected):
    assert parse_budget(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "half",
        "50",
        "0%",
        "0MiB",
        "12 parsecs",
        "-5%",
        "5%%",
        "floor+",
        "floor+120%",
        "floor+5MiB",
    ],
)
def test_other_text_is_refused_in_one_line(text: str):
    with pytest.raises(BudgetTextError) as refused:
        parse_budget(text)
    assert "\n" not in str(refused.value)
    assert "--budget" in str(refused.value)


def test_reading_budgets_loads_no_numpy():
    code = "import sys, topos.budget_text; print('numpy' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert loaded.stdout.strip() == "False", loaded.stderr


@pytest.mark.parametrize(
    "text", ["9" * 400 + "MiB", "9" * 400 + "%", "1e400B", "2EiB", "2000000000GiB", "1000000%"]
)
def test_a_budget_beyond_its_bounds_is_one_line(text: str):
    with pytest.raises(BudgetTextError, match="--budget") as caught:
        parse_budget(text)
    assert "\n" not in str(caught.value)


def test_a_budget_above_the_floor_lies_between_the_floor_and_the_unconstrained_plan():
    from topos.engine.budget import Budget

    budget = Budget.of("floor+25%")
    assert budget.bytes_of(unconstrained=1000, floor=600) == 700
    assert Budget.of("floor+100%").bytes_of(unconstrained=1000, floor=600) == 1000
    assert Budget.of("floor+0%").bytes_of(unconstrained=1000, floor=600) == 600
    assert str(budget) == "floor+25%" and not budget.is_floor

"""Habits people bring from hyperfine and friends: `--warmup N`, `--export-csv` and
`--export-markdown` beside `--json`, flags shown without a value placeholder, the exit
statuses listed in `--help`; and the frontier's budgets relative to the floor, its warnings
on the terminal, its picture and page titled as its command."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ElementTree

import pytest

from tests.cli.grading import TINY, grade_tiny, one_line_error, succeeded, topos
from tests.cli.result_examples import example_result
from topos.budget_text import parse_budget
from topos_cli.commands.grade_commands import DEFAULT_FRONTIER_BUDGETS
from topos_cli.render.exporters.export_rows import COLUMNS
from topos_cli.render.report_html import render_report_html

#: What every help that lists the exit statuses must name.
EXIT_STATUSES = ("0 ok", "1 a route failed", "2 usage", "3 parity broken", "4 regression")
EXIT_STATUSES += ("5 inconclusive", "130 interrupted")


def _help(tmp_path, *command: str) -> str:
    completed = topos(*command, "--help", cwd=tmp_path, COLUMNS="200")
    assert completed.returncode == 0, completed.stderr
    return " ".join(completed.stdout.split())


@pytest.mark.parametrize("command", [(), ("grade",)])
def test_help_lists_the_exit_statuses(tmp_path, command):
    text = _help(tmp_path, *command)
    for status in EXIT_STATUSES:
        assert status in text
    assert "README" not in text


@pytest.mark.parametrize(
    "command", [(), ("grade",), ("frontier",), ("compare",), ("report",), ("check",)]
)
def test_no_flag_shows_a_value_placeholder(tmp_path, command):
    text = _help(tmp_path, *command)
    assert "<bool>" not in text
    assert "<int>" in text or "<str>" in text or not command  # other options keep theirs


def test_grade_help_shows_warmup_without_a_short_option_and_how_to_gate_a_pull_request(tmp_path):
    text = _help(tmp_path, "grade")
    assert "--warmup" in text
    assert "--export-csv" in text and "--export-markdown" in text
    assert "topos grade --against origin/main --repeat auto" in " ".join(text.split())
    # hyperfine's -w is its warm-up; ours has no short option that could be taken for it.
    completed = topos("grade", "--warmup", "-1", cwd=tmp_path)
    assert completed.returncode == 2
    assert "--warmup" in one_line_error(completed)


@pytest.mark.parametrize("warmup", [0, 3])
def test_the_warm_up_steps_reach_the_worker(tmp_path, warmup):
    completed, result = grade_tiny(
        "tiny", tmp_path, "--warmup", str(warmup), "--routes", "recorded", steps=3
    )
    assert completed.returncode == 0, completed.stderr
    assert result["settings"]["warmup_steps"] == warmup
    (run,) = result["repeats"]
    ready = run["facts"]["ready"]
    assert ready["warmup_steps"] == warmup
    assert len(ready["warm_up_step_seconds"]) == warmup
    if warmup == 0:
        # No warm-up: the cold first step is the first measured one.
        assert ready["warm_up_seconds"] is None
        assert run["first_step_seconds"] == run["step_seconds"][0]


def test_csv_and_markdown_exports_hold_one_row_per_route(tmp_path):
    csv_path, markdown_path = tmp_path / "out" / "grade.csv", tmp_path / "grade.md"
    completed, result = grade_tiny(
        "tiny",
        tmp_path,
        "--export-csv",
        str(csv_path),
        "--export-markdown",
        str(markdown_path),
        steps=4,
    )
    assert completed.returncode == 0, completed.stderr
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    assert tuple(rows[0]) == COLUMNS
    assert [row["route"] for row in rows] == ["engine", "recorded"]
    for row, route in zip(rows, result["verdict"]["routes"], strict=True):
        speed = route["speed"]["milliseconds_per_step"]
        assert float(row["wall_ms_per_step_median"]) == pytest.approx(speed["median"])
        low = float(row["wall_ms_per_step_lower_quartile"])
        high = float(row["wall_ms_per_step_upper_quartile"])
        assert low <= float(row["wall_ms_per_step_median"]) <= high
        assert int(row["peak_rss_bytes"]) == route["memory"]["peak_rss_bytes"]
        assert int(row["training_delta_bytes"]) == route["memory"]["training_delta_bytes"]
        assert row["parity"] == "bit-identical"
    assert rows[0]["judgement_vs_reference"] == "reference"
    assert float(rows[0]["time_vs_reference"]) == 1.0
    # One repeat of 4 steps: the time is a number, judged in words, with no interval.
    ratio = result["verdict"]["routes"][1]["speed"]["ratio"]
    assert float(rows[1]["time_vs_reference"]) == pytest.approx(ratio["time_ratio"]["ratio"])
    assert rows[1]["judgement_vs_reference"] == ratio["judgement"]["outcome"]
    assert rows[1]["time_vs_reference_lower"] == rows[1]["time_vs_reference_upper"] == ""
    for row, route in zip(rows, result["verdict"]["routes"], strict=True):
        cpu = route["speed"]["cpu_milliseconds_per_step"]
        assert float(row["cpu_ms_per_step"]) == pytest.approx(cpu)
    table = markdown_path.read_text().splitlines()
    assert table[0].startswith("| route | status |") and "peak RSS" in table[0]
    assert set(table[1]) <= set("|-: ")
    assert [line.split("|")[1].strip() for line in table[2:]] == ["engine", "recorded"]
    assert all("bit-identical" in line for line in table[2:])


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (("--export-csv", "{json}"), "--export-csv"),
        (("--export-csv", "{tmp}/a", "--export-markdown", "{tmp}/a"), "--export-markdown"),
        (("--export-markdown", "-"), "--export-markdown"),
        (("--export-csv", "{tmp}"), "--export-csv"),
    ],
)
def test_an_export_is_guarded_as_json_is(tmp_path, arguments, named):
    json_path = tmp_path / "result.json"
    filled = [a.format(json=json_path, tmp=tmp_path) for a in arguments]
    completed, result = grade_tiny("tiny", tmp_path, *filled)
    assert completed.returncode == 2
    assert named in one_line_error(completed)
    assert result is None


def test_the_default_frontier_budgets_never_fall_below_the_floor():
    budgets = [parse_budget(text) for text in DEFAULT_FRONTIER_BUDGETS.split(",")]
    assert "floor" in budgets and 1.0 in budgets
    # Every other budget lies between the floor and 100%, whatever the workload's floor.
    between = [budget for budget in budgets if isinstance(budget, tuple)]
    assert len(between) >= 2
    assert all(budget[0] == "floor" and 0 < budget[1] < 1 for budget in between)
    assert not [budget for budget in budgets if isinstance(budget, float) and budget < 1.0]


def test_the_frontier_prints_its_warnings_and_titles_its_picture(tmp_path):
    completed, result = succeeded(
        "frontier",
        "--workload",
        TINY + "tiny",
        "--budgets",
        "floor+50%,floor",
        "--steps",
        "3",
        cwd=tmp_path,
        timeout=120.0,
        name="frontier.json",
    )
    # On this tiny perceptron both budgets lower to one plan: one point (issue 42).
    assert result["frontier"]["points"] == ["engine", "recorded", "remat@floor+50%=floor"]
    for warning in result["verdict"]["warnings"]:
        # Said alone, or grouped with its cause's other routes (`warning_groups`).
        alone = f"warning: {warning['message']}" in completed.stdout
        grouped = bool(warning.get("detail")) and warning["detail"] in completed.stdout
        assert alone or grouped, warning
        assert f"remedy: {warning['remedy']}" in completed.stdout
    picture = ElementTree.parse(tmp_path / "frontier.svg").getroot()
    texts = [element.text or "" for element in picture.iter("{http://www.w3.org/2000/svg}text")]
    assert any(text.startswith("topos frontier") for text in texts)


def test_a_frontier_page_is_titled_topos_frontier():
    from topos_cli.render.report_contents import gather_report_contents
    from topos_cli.result.lenient_result import interpret_result

    result = example_result(steps=10)
    figures = dict.fromkeys(("memory", "steps", "loss"), "<svg></svg>")
    grade_page = render_report_html(
        gather_report_contents(interpret_result(result, "t")), svgs=figures
    )
    assert "<h1>topos grade:" in grade_page
    result["frontier"] = {"budgets": ["floor"], "points": [], "refused": [], "picture": "x.svg"}
    frontier_page = render_report_html(
        gather_report_contents(interpret_result(result, "t")), svgs=figures
    )
    assert "<h1>topos frontier:" in frontier_page

"""`topos check` and `topos grade --check` as real subprocesses: exit 0, 3 and 2."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from tests.cli.grading import ROOT, TINY, environment, one_line_error, topos
from tests.support.parent_process import heavy_modules_loaded
from topos_cli.commands.check import CheckOptions, run_check

MANY = "tests.checking.checked_workloads:many"


@pytest.mark.parametrize("workload", ["cifar10", "mnist"])
def test_the_built_in_workloads_check_right(workload):
    output = io.StringIO()
    status = run_check(CheckOptions(workload=workload), stdout=output, stderr=io.StringIO())
    assert status == 0, output.getvalue()
    assert "gradients right" in output.getvalue()
    assert "float32 routes bit-identical" in output.getvalue()


def test_the_gpt_workload_checks_right_and_names_its_parameters():
    # Index inputs stay integers while the model is recorded in float64.
    output = io.StringIO()
    options = CheckOptions(workload="gpt", rows=2, directions=1)
    status = run_check(options, stdout=output, stderr=io.StringIO())
    assert status == 0, output.getvalue()
    assert "blocks.1.attention.qkv.weight" in output.getvalue()
    assert "gradients right" in output.getvalue()


def test_the_example_workload_checks_right(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    output = io.StringIO()
    options = CheckOptions(workload="tiny_workload:workload")
    assert run_check(options, stdout=output, stderr=io.StringIO()) == 0, output.getvalue()


def test_a_right_check_exits_0_and_writes_json(tmp_path):
    completed = topos("check", "--workload", TINY + "tiny", "--json", "check.json", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert "gradients right" in completed.stdout
    result = json.loads((tmp_path / "check.json").read_text())
    assert result["schema"] == "topos.check/1" and result["exit_status"] == 0
    assert result["passed"] and result["culprit"] is None
    assert result["parity"]["identical"]
    assert [check["passed"] for check in result["parameters"]] == [True] * 4
    assert result["batch"]["rows"] == 16


@pytest.mark.parametrize("rule", ["matmul", "user_softplus"])
def test_a_broken_rule_exits_3_naming_it(tmp_path, rule):
    completed = topos("check", "-w", MANY, "--json", "-", cwd=tmp_path, TOPOS_BREAK_RULE=rule)
    assert completed.returncode == 3, completed.stderr
    result = json.loads(completed.stdout)
    assert result["exit_status"] == 3 and not result["gradients_right"]
    assert result["culprit"]["primitive"] == rule
    assert "checked_workloads.py:" in result["culprit"]["source"]
    assert f"first wrong rule: {rule}(" in completed.stderr  # the table went to stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--workload", TINY + "hoards"], "cannot record in float64"),
        (["--workload", "no_such_workload"], "unknown workload"),
        (["--workload", TINY + "tiny", "--route", "sideways"], "unknown route"),
        (["--workload", TINY + "tiny", "--directions", "0"], "--directions"),
        (["--workload", TINY + "tiny", "--data", "no/such/folder"], "no such directory"),
    ],
)
def test_bad_input_exits_2_in_one_line(tmp_path, arguments, message):
    completed = topos("check", *arguments, cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    assert message in one_line_error(completed)


def test_grade_check_refuses_to_grade_wrong_gradients(tmp_path):
    completed = topos(
        "grade", "-w", MANY, "--check", "--steps", "2", "--json", "grade.json", cwd=tmp_path,
        TOPOS_BREAK_RULE="tanh",
    )  # fmt: skip
    assert completed.returncode == 3, completed.stderr
    assert "first wrong rule: tanh(" in completed.stdout
    assert "the routes were not graded" in completed.stderr
    assert not (tmp_path / "grade.json").exists()


def test_grade_check_then_grades_right_gradients_without_numpy_in_the_parent(tmp_path):
    script = (
        "from topos_cli.commands.grade import GradeOptions, run_grade\n"
        f"options = GradeOptions(workload={TINY + 'tiny'!r}, steps=2, json_path='out.json',"
        " check=True)\n"
        "assert run_grade(options) == 0\n"
    )
    loaded, completed = heavy_modules_loaded(script, tmp_path, environment())
    assert completed.returncode == 0, completed.stderr
    assert loaded == "loaded []"
    assert "gradients right" in completed.stdout
    assert (tmp_path / "out.json").exists()


def test_the_check_module_loads_neither_numpy_nor_the_library():
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, topos_cli.commands.check; "
            "print(sorted(n for n in sys.modules if n == 'numpy' or "
            "n.startswith('topos.') and n != 'topos.names'))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert completed.stdout.strip() == "[]"

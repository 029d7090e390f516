"""Issue 11 with real subprocesses: a workload that cannot be loaded is exit 2 with one line
naming it, from every command, and a grade finds out before a second route runs."""

from __future__ import annotations

import json

import pytest

from tests.cli.grading import one_line_error, topos

MODULES = {
    "raises_at_import": 'raise RuntimeError("the module fails\\non purpose")\n',
    "has_a_syntax_error": "def broken(:\n    pass\n",
    "exits_at_import": "import sys\nsys.exit(3)\n",
    # Issue 43: no signal was sent, so no route may say "killed by SIGINT".
    "interrupts_at_import": "raise KeyboardInterrupt\n",
    "stops_at_import": "class Stop(BaseException):\n    pass\n\nraise Stop('on purpose')\n",
}

FRAGMENTS = {
    "raises_at_import": "(RuntimeError: the module fails on purpose)",
    "has_a_syntax_error": "(SyntaxError: ",
    "exits_at_import": "it called sys.exit(3) as it was imported",
    "interrupts_at_import": "its code raised KeyboardInterrupt as it was imported (no signal",
    "stops_at_import": "(Stop: on purpose)",
}


@pytest.fixture
def modules(tmp_path):
    """A folder of broken workload modules, to go on PYTHONPATH."""
    folder = tmp_path / "modules"
    folder.mkdir()
    for name, text in MODULES.items():
        (folder / f"{name}.py").write_text(text)
    return folder


def _with(modules):
    import os

    return {"PYTHONPATH": os.pathsep.join([str(modules), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_workload_module_that_cannot_be_imported_stops_the_grade_at_once(
    tmp_path, modules, module
):
    from tests.cli.grading import ROOT

    extra = _with(modules)
    extra["PYTHONPATH"] += f":{ROOT}"
    name = f"{module}:workload"
    completed = topos(
        "grade", "--workload", name, "--steps", "2", "--json", "result.json", cwd=tmp_path, **extra
    )
    assert completed.returncode == 2, completed.stderr
    line = one_line_error(completed)
    assert f"workload {name!r}: cannot import {module!r}" in line
    assert FRAGMENTS[module] in line
    assert completed.stdout == ""  # no table of failures
    assert "SIGINT" not in completed.stderr and "interrupted" not in completed.stderr
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["status"] == "error" and len(result["repeats"]) == 1


@pytest.mark.parametrize("command", ["describe", "train"])
@pytest.mark.parametrize("module", sorted(MODULES))
def test_describe_and_run_say_the_same_in_one_line_exit_2(tmp_path, modules, module, command):
    name = f"{module}:workload"
    completed = topos(command, "--workload", name, cwd=tmp_path, **_with(modules))
    assert completed.returncode == 2, completed.stderr
    line = one_line_error(completed)
    assert f"workload {name!r}: cannot import {module!r}" in line
    assert FRAGMENTS[module] in line


@pytest.mark.parametrize("name", [":workload", "module:", "a b:c", "module:a.b", "1st:workload"])
@pytest.mark.parametrize("command", ["grade", "describe"])
def test_a_malformed_workload_name_is_one_line_exit_2(tmp_path, name, command):
    completed = topos(command, "--workload", name, cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    line = one_line_error(completed)
    assert repr(name) in line and "package.module:attribute" in line
    assert not (tmp_path / "results").exists()


def test_a_signal_that_arrives_as_a_module_is_imported_is_still_an_interrupt(tmp_path):
    import signal
    import subprocess
    import sys

    from tests.cli.grading import environment

    (tmp_path / "signals_itself.py").write_text(
        "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", "from topos.workloads import resolve; resolve('signals_itself:w')"],
        cwd=tmp_path,
        env=environment(PYTHONPATH=f"{tmp_path}:{environment()['PYTHONPATH']}"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # Python ends of an unhandled KeyboardInterrupt by the signal itself.
    assert completed.returncode == -signal.SIGINT, completed.stderr
    assert "WorkloadNotFoundError" not in completed.stderr


INTERRUPTING = """\
import dataclasses

from tests.cli.tiny_workloads import FailingSchedule, tiny


def record(tape, rows):
    raise KeyboardInterrupt


def interrupt():
    raise KeyboardInterrupt


in_record = dataclasses.replace(tiny, record=record)
in_training = dataclasses.replace(tiny, learning_rate=FailingSchedule(interrupt, route=None))
"""


def _interrupting(tmp_path, attribute: str):
    from tests.cli.grading import ROOT

    (tmp_path / "interrupting.py").write_text(INTERRUPTING)
    return topos(
        "grade",
        "--workload",
        f"interrupting:{attribute}",
        "--steps",
        "5",
        "--json",
        "result.json",
        cwd=tmp_path,
        PYTHONPATH=f"{tmp_path}:{ROOT}",
    )


def test_a_workload_whose_code_raises_keyboard_interrupt_is_no_signal(tmp_path):
    completed = _interrupting(tmp_path, "in_record")
    assert completed.returncode == 2, completed.stderr
    line = one_line_error(completed)
    assert "KeyboardInterrupt in your workload at" in line and "(in record)" in line, line
    assert "SIGINT" not in completed.stderr + completed.stdout


def test_keyboard_interrupt_raised_while_training_fails_the_route_naming_it(tmp_path):
    completed = _interrupting(tmp_path, "in_training")
    assert completed.returncode == 1, completed.stderr
    assert "SIGINT" not in completed.stderr + completed.stdout
    assert "KeyboardInterrupt" in completed.stdout, completed.stdout


# Issue 48: a workload named by its file's path, `path/to/file.py[:attribute]`.
FILES = {
    "has_a_syntax_error.py": ("def broken(:\n    pass\n", "(SyntaxError: invalid syntax"),
    "raises_at_import.py": (
        'x = 1\nraise RuntimeError("on purpose")\n',
        "(RuntimeError: on purpose), raised at mine/raises_at_import.py:2",
    ),
    "holds_no_workload.py": ("x = 1\n", "has no 'workload'"),
}


@pytest.mark.parametrize("file", sorted(FILES))
def test_a_workload_file_that_cannot_give_a_workload_is_one_line_naming_it(tmp_path, file):
    from tests.cli.grading import ROOT

    text, fragment = FILES[file]
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / file).write_text(text)
    name = f"mine/{file}"
    completed = topos(
        "grade",
        "--workload",
        name,
        "--steps",
        "2",
        "--json",
        "result.json",
        cwd=tmp_path,
        PYTHONPATH=str(ROOT),
    )
    assert completed.returncode == 2, completed.stderr
    line = one_line_error(completed)
    assert f"workload {name!r}" in line and name in line.partition(":")[2], line
    assert fragment in line, line
    if file == "has_a_syntax_error.py":
        assert "has_a_syntax_error.py, line 1" in line, line


@pytest.mark.parametrize("name", ["mine/nowhere.py", "mine/nowhere.py:tiny", "mine.py:1st"])
@pytest.mark.parametrize("command", ["grade", "describe"])
def test_a_workload_file_not_there_is_refused_before_anything_runs(tmp_path, name, command):
    (tmp_path / "mine.py").write_text("raise SystemExit('never imported')\n")
    completed = topos(command, "--workload", name, cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    line = one_line_error(completed)
    assert repr(name) in line, line
    expected = "no such file mine/nowhere.py" if "nowhere" in name else "path/to/file.py:attribute"
    assert expected in line, line
    assert not (tmp_path / "results").exists()


WORKLOAD_FILE = """\
import dataclasses

from tests.cli.tiny_workloads import tiny
from beside_it import NAME  # a module beside the file imports as `python file.py` has it

workload = dataclasses.replace(tiny, name=NAME)
other = dataclasses.replace(tiny, name=NAME + "-other")
"""


@pytest.mark.parametrize(("attribute", "expected"), [("", "by-file"), (":other", "by-file-other")])
def test_a_workload_named_by_its_file_is_graded(tmp_path, attribute, expected):
    from tests.cli.grading import ROOT

    folder = tmp_path / "my models"  # a space: a path, not a module name
    folder.mkdir()
    (folder / "tiny-model.py").write_text(WORKLOAD_FILE)
    (folder / "beside_it.py").write_text('NAME = "by-file"\n')
    name = f"my models/tiny-model.py{attribute}"
    completed = topos(
        "grade", "--workload", name, "--steps", "2", cwd=tmp_path, PYTHONPATH=str(ROOT)
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    # The workload's own name names the result file: the attribute asked for was graded.
    (path,) = (tmp_path / "results").glob("grade-*.json")
    assert path.name.startswith(f"grade-{expected}-2"), path.name
    result = json.loads(path.read_text())
    # The result is of the workload as named, as a `module:attribute` one's is.
    assert result["workload"]["name"] == name
    assert {run["status"] for run in result["repeats"]} == {"ok"}
    code = result["repeats"][0]["facts"]["ready"]["code"]
    assert code["workload_module"] == "tiny_model"
    assert code["workload_file"] == str((folder / "tiny-model.py").resolve())

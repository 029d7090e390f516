"""Issue 11 with real subprocesses: a result is never lost, never clobbers what it should
not, and a result file that is not one (malformed, endless, special) is refused up front."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.cli.grading import (
    TINY,
    TOPOS,
    environment,
    grade_tiny,
    one_line_error,
    start_topos,
    topos,
)


@pytest.fixture(scope="module")
def complete_result(tmp_path_factory):
    """The text of a complete result of the tiny workload (four steps: `raises` fails at
    its fourth, so a grade of it compares with this one)."""
    folder = tmp_path_factory.mktemp("complete")
    completed, result = grade_tiny("tiny", folder, steps=4)
    assert completed.returncode == 0, completed.stderr
    return json.dumps(result)


def _damaged(text, damage):
    result = json.loads(text)
    if damage == "peak is text":
        result["repeats"][0]["peak_rss_bytes"] = "big"
    elif damage == "settings is a list":
        result["settings"] = ["routes"]
    elif damage == "host is null":
        result["host"] = None
    elif damage == "step time is text":
        result["repeats"][1]["step_seconds"][0] = "0.1"
    elif damage == "facts is a list":
        result["repeats"][1]["facts"] = [1, 2]
    elif damage == "verdict settings is a number":
        result["verdict"]["settings"] = 3
    return json.dumps(result)


DAMAGES = [
    "peak is text",
    "settings is a list",
    "host is null",
    "step time is text",
    "facts is a list",
    "verdict settings is a number",
]


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_malformed_baseline_is_refused_before_any_work(tmp_path, complete_result, damage):
    baseline = tmp_path / "baseline.json"
    baseline.write_text(_damaged(complete_result, damage))
    completed = topos(
        "grade",
        "--workload",
        TINY + "tiny",
        "--baseline",
        str(baseline),
        "--json",
        str(tmp_path / "out" / "new.json"),
        cwd=tmp_path,
    )
    assert completed.returncode == 2, completed.stderr
    assert f"{baseline} is a malformed topos result" in one_line_error(completed)
    assert "started (worker" not in completed.stderr  # refused before any worker
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was created


@pytest.mark.parametrize("damage", DAMAGES)
def test_compare_refuses_a_malformed_result_in_one_line(tmp_path, complete_result, damage):
    (tmp_path / "good.json").write_text(complete_result)
    (tmp_path / "bad.json").write_text(_damaged(complete_result, damage))
    for old, new in (("good.json", "bad.json"), ("bad.json", "good.json")):
        completed = topos("compare", old, new, cwd=tmp_path)
        assert completed.returncode == 2, completed.stderr
        assert "bad.json is a malformed topos result" in one_line_error(completed)


def test_endless_and_special_result_files_are_refused_without_blocking(tmp_path, complete_result):
    (tmp_path / "good.json").write_text(complete_result)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/zero", str(tmp_path)):
        completed = topos("compare", path, "good.json", cwd=tmp_path, timeout=20)
        assert completed.returncode == 2, completed.stderr
        assert f"{path} is " in one_line_error(completed)
        refused = topos("grade", "--baseline", path, cwd=tmp_path, timeout=20)
        assert refused.returncode == 2, refused.stderr
    endless = subprocess.run(
        [*TOPOS, "compare", "-", "good.json"],
        stdin=open("/dev/zero", "rb"),  # noqa: SIM115 - closed with the process
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert endless.returncode == 2
    assert "standard input is not a topos result (larger than" in one_line_error(endless)


def test_special_files_are_refused_as_outputs_before_any_work(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for option in ("--json", "--github-benchmark"):
        for path in (str(fifo), "/dev/null"):
            completed = topos("grade", option, path, cwd=tmp_path, timeout=20)
            assert completed.returncode == 2, completed.stderr
            assert "it is not a regular file" in one_line_error(completed)
    assert fifo.exists() and not fifo.is_file()


def test_one_file_named_twice_is_refused(tmp_path):
    alias = tmp_path / "alias.json"
    alias.symlink_to(tmp_path / "same.json")
    for second in ("same.json", str(alias)):
        completed = topos(
            "grade", "--json", "same.json", "--github-benchmark", second, cwd=tmp_path
        )
        assert completed.returncode == 2, completed.stderr
        assert "--json and --github-benchmark name the same file" in one_line_error(completed)
    assert not (tmp_path / "same.json").exists()


def test_a_symbolic_link_is_written_through(tmp_path):
    (tmp_path / "kept").mkdir()
    link = tmp_path / "result.json"
    link.symlink_to(tmp_path / "kept" / "target.json")
    completed, result = grade_tiny("tiny", tmp_path, steps=2)
    assert completed.returncode == 0, completed.stderr
    assert link.is_symlink() and result["status"] == "complete"
    assert json.loads((tmp_path / "kept" / "target.json").read_text())["status"] == "complete"


def test_a_usage_error_creates_no_folder(tmp_path):
    for arguments in (["--json", "new/deeper/result.json"], []):
        completed = topos("grade", "--steps", "0", *arguments, cwd=tmp_path)
        assert completed.returncode == 2
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("workload", "arguments", "status", "name"),
    [
        ("raises", [], 1, "result.failed.json"),
        # A data error a worker reports (a misshapen model is now refused before any
        # worker starts, writing nothing: tests/cli/commands/test_user_code_errors.py).
        ("tiny", ["--data", "."], 2, "result.error.json"),
    ],
)
def test_a_lesser_grade_never_replaces_a_complete_result(
    tmp_path, complete_result, workload, arguments, status, name
):
    (tmp_path / "result.json").write_text(complete_result)
    completed, result = grade_tiny(workload, tmp_path, *arguments)
    assert completed.returncode == status, completed.stderr
    assert result == json.loads(complete_result)  # kept whole
    beside = json.loads((tmp_path / name).read_text())
    assert beside["exit_status"] == status
    assert f"results: {tmp_path / name}" in completed.stderr
    # A complete grade replaces a complete result.
    replaced, result = grade_tiny("tiny", tmp_path, steps=3)
    assert replaced.returncode == 0 and result["steps"] == 3


def test_grades_started_together_never_share_a_default_name(tmp_path):
    command = ["grade", "--workload", TINY + "tiny", "--steps", "1", "--routes", "engine"]
    processes = [start_topos(*command, cwd=tmp_path, stdout=subprocess.DEVNULL) for _ in range(3)]
    lines = []
    for process in processes:
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 0, stderr
        lines += [line for line in stderr.splitlines() if line.startswith("results: ")]
    written = sorted((tmp_path / "results").iterdir())
    assert len(lines) == len(set(lines)) == len(written) == 3
    for path in written:
        assert json.loads(path.read_text())["status"] == "complete"


def test_a_result_that_cannot_be_written_at_the_end_is_saved_elsewhere(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    fallback = tmp_path / "fallback"
    fallback.mkdir()
    completed = topos(
        "grade",
        "--workload",
        TINY + "blocks_its_result",
        "--steps",
        "6",
        "--json",
        str(folder / "result.json"),
        cwd=tmp_path,
        TINY_BLOCKED_FOLDER=str(folder),
        TMPDIR=str(fallback),
    )
    assert completed.returncode == 2, completed.stderr
    assert "bit-identical" in completed.stdout  # the verdict is printed anyway
    line = one_line_error(completed)
    assert f"cannot write {folder / 'result.json'}" in line
    assert f"saved to {fallback / 'result.json'} instead" in line
    assert json.loads((fallback / "result.json").read_text())["status"] == "complete"


def test_compare_never_calls_a_failed_route_no_regression(tmp_path, complete_result):
    # compare refuses results of other settings: both grades take the same four steps.
    old = json.loads(complete_result)
    assert old["steps"] == 4
    old["workload"]["name"] = TINY + "raises"  # the same model, before it learned to fail
    (tmp_path / "old.json").write_text(json.dumps(old))
    completed, _ = grade_tiny("raises", tmp_path, steps=4)
    assert completed.returncode == 1, completed.stderr
    compared = topos("compare", "old.json", "result.json", cwd=tmp_path)
    assert compared.returncode == 1, compared.stderr
    assert "no regression" not in compared.stdout
    assert "route recorded did not finish in result.json (failed: 1 of 1 runs)" in compared.stdout

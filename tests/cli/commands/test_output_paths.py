"""One guard for every output path: no device, FIFO or link target replaced, no output that
is an input, no two outputs on one path, `-` only where it means standard output."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli.grading import TINY, one_line_error, topos
from tests.cli.result_examples import example_result
from topos_cli.harness.grade_preparation import GradeOptions, prepare
from topos_cli.shared.errors import ToposUsageError
from topos_cli.shared.output_path import check_not_input, check_output, check_outputs


def _result(folder: Path, name: str = "r.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(example_result()))
    return path


def test_a_regular_file_and_a_new_one_are_accepted(tmp_path: Path) -> None:
    (tmp_path / "old.html").write_text("old")
    check_output(tmp_path / "old.html", "--html")
    check_output(tmp_path / "new" / "page.html", "--html")
    assert not (tmp_path / "new").exists()  # nothing is created


def test_a_link_to_a_regular_file_is_written_through(tmp_path: Path) -> None:
    (tmp_path / "target.html").write_text("old")
    (tmp_path / "link.html").symlink_to(tmp_path / "target.html")
    check_output(tmp_path / "link.html", "--html")


@pytest.mark.parametrize("kind", ["device", "fifo", "link to a device", "directory"])
def test_what_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "out"
    if kind == "device":
        path = Path("/dev/null")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "link to a device":
        path.symlink_to("/dev/null")
    else:
        path.mkdir()
    with pytest.raises(ToposUsageError, match="--png"):
        check_output(path, "--png")


def test_dash_is_standard_output_only_where_allowed() -> None:
    check_output("-", "--html", standard_output=True)
    with pytest.raises(ToposUsageError, match="cannot go to standard output"):
        check_output("-", "--html")


def test_two_outputs_on_one_file_or_both_on_standard_output_are_refused(tmp_path: Path) -> None:
    (tmp_path / "x").symlink_to(tmp_path / "y")
    with pytest.raises(ToposUsageError, match="--html and --png name the same file"):
        check_outputs({"--html": str(tmp_path / "x"), "--png": str(tmp_path / "y")})
    with pytest.raises(ToposUsageError, match="cannot both go to standard output"):
        check_outputs({"--html": "-", "--png": "-"}, standard_output=("--html", "--png"))


def test_an_output_that_is_an_input_or_inside_a_read_folder_is_refused(tmp_path: Path) -> None:
    result = _result(tmp_path)
    with pytest.raises(ToposUsageError, match="which this command reads"):
        check_not_input({"--html": str(result)}, {"the result": str(result)})
    only_json = {"read_in_folder": lambda path: path.suffix == ".json"}
    with pytest.raises(ToposUsageError, match="inside"):
        check_not_input({"--html": str(tmp_path / "x.json")}, {"DIR": str(tmp_path)}, **only_json)
    check_not_input({"--html": str(tmp_path / "history.html")}, {"DIR": str(tmp_path)}, **only_json)


def test_grade_refuses_the_report_beside_its_result_on_the_benchmark_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOPOS_REPORT", raising=False)
    options = GradeOptions(
        workload="mnist",
        json_path=str(tmp_path / "gb.json"),
        github_benchmark=str(tmp_path / "gb.html"),
    )
    with pytest.raises(ToposUsageError, match="--github-benchmark and the report beside"):
        prepare(options)
    monkeypatch.setenv("TOPOS_REPORT", "off")
    prepare(options)  # no report drawn: nothing collides


def test_grade_refuses_a_benchmark_file_that_is_the_baseline(tmp_path: Path) -> None:
    baseline = _result(tmp_path, "base.json")
    options = GradeOptions(
        workload="cifar10", json_path=str(tmp_path / "r.json"), github_benchmark=str(baseline)
    )
    with pytest.raises(ToposUsageError, match="--baseline"):
        prepare(GradeOptions(**{**options.__dict__, "baseline": str(baseline)}))


def test_frontier_refuses_a_fifo_where_its_picture_goes(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "f.svg")
    options = GradeOptions(workload="mnist", json_path=str(tmp_path / "f.json"), budgets=("50%",))
    with pytest.raises(ToposUsageError, match="picture"):
        prepare(options)


# The commands themselves, as people run them: one line, exit 2, the input intact.


def test_report_refuses_to_write_over_the_result_it_reads(tmp_path: Path) -> None:
    result = _result(tmp_path)
    before = result.read_bytes()
    for option in ("--html", "--png"):
        completed = topos("report", str(result), option, str(result), cwd=tmp_path)
        assert completed.returncode == 2, completed.stderr
        assert "which this command reads" in one_line_error(completed)
    assert result.read_bytes() == before


def test_report_refuses_html_and_png_on_one_path_and_a_fifo(tmp_path: Path) -> None:
    result = _result(tmp_path)
    completed = topos("report", str(result), "--html", "x", "--png", "x", cwd=tmp_path)
    assert completed.returncode == 2
    assert "--html and --png name the same file" in one_line_error(completed)
    os.mkfifo(tmp_path / "pipe")
    completed = topos("report", str(result), "--html", "pipe", cwd=tmp_path, timeout=30)
    assert completed.returncode == 2
    assert "not a regular file" in one_line_error(completed)


def test_report_html_dash_goes_to_standard_output(tmp_path: Path) -> None:
    result = _result(tmp_path)
    completed = topos("report", str(result), "--html", "-", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.lstrip().lower().startswith("<!doctype html")
    assert not (tmp_path / "-").exists()


def test_history_refuses_a_page_that_would_be_read_as_a_result(tmp_path: Path) -> None:
    result = _result(tmp_path)
    before = result.read_bytes()
    for target in (result, tmp_path / "x.json"):
        completed = topos("history", str(tmp_path), "--html", str(target), cwd=tmp_path)
        assert completed.returncode == 2, completed.stderr
        assert "reads" in one_line_error(completed)
    assert result.read_bytes() == before
    assert not (tmp_path / "x.json").exists()
    completed = topos("history", str(tmp_path), "--html", "-", cwd=tmp_path)
    assert completed.returncode == 2
    assert not (tmp_path / "-").exists()
    completed = topos("history", str(tmp_path), cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "history.html").is_file()


def test_grade_refuses_its_report_on_the_benchmark_file_before_any_worker(tmp_path: Path) -> None:
    completed = topos(
        "grade",
        "--workload",
        TINY + "tiny",
        "--steps",
        "2",
        "--json",
        "gb.json",
        "--github-benchmark",
        "gb.html",
        cwd=tmp_path,
        TOPOS_REPORT="on",
    )
    assert completed.returncode == 2, completed.stderr
    assert "--github-benchmark and the report beside the result" in one_line_error(completed)
    assert not (tmp_path / "gb.json").exists()


def test_a_full_disk_names_the_result_file_not_its_hidden_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from topos_cli.harness.result_destination import save_result

    def full(descriptor: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    wanted = tmp_path / "results" / "grade-x.json"
    saved = save_result(str(wanted), {"status": "complete"}, default=True)
    assert saved.error == f"cannot write {wanted}: No space left on device"
    assert ".tmp" not in saved.error


def test_a_failed_grade_beside_a_complete_result_does_not_call_itself_complete(
    tmp_path: Path,
) -> None:
    import io

    from topos_cli.commands.grade import _report_saved
    from topos_cli.harness.result_destination import save_result
    from topos_cli.result.grade_result import GradeResult, WorkloadFacts

    def result(exit_status: int) -> GradeResult:
        workload = WorkloadFacts(name="tiny")
        return GradeResult(workload=workload, steps=1, status="complete", exit_status=exit_status)

    path = tmp_path / "r.json"
    path.write_text(json.dumps(result(0).to_json()))
    failed = result(1)  # every run ran, a route failed
    saved = save_result(str(path), failed, default=False)
    assert saved.kept == str(path) and saved.path == str(tmp_path / "r.failed.json")
    stderr = io.StringIO()
    _report_saved(saved, failed, 1, stderr)
    assert "this failed grade's result is beside it" in stderr.getvalue()
    assert "complete grade" not in stderr.getvalue()

"""The report's drawing child, started as a grade begins: it loads while the workers do,
is stopped if still loading when a run's turn comes, and draws once told."""

from __future__ import annotations

import contextlib
import io
import os
import time

import psutil

from tests.cli.grading import topos
from tests.cli.render.test_report_html import svgs, write
from tests.cli.result_examples import example_result
from topos_cli.harness.report_child import (
    REPORT_MODULE,
    ReportChild,
    ReportDrawing,
    _Early,
    draw_report_in_child,
)


def test_a_child_started_early_draws_the_report_once_told(tmp_path):
    path = write(tmp_path, example_result())
    child = ReportChild.start()
    pid = child.process.pid
    assert child.has_loaded(timeout=60.0)
    child.pause()  # loaded: only waiting on a pipe, so it is left running
    assert psutil.Process(pid).status() != psutil.STATUS_STOPPED
    errors = io.StringIO()
    report = draw_report_in_child(path, errors, child=child)
    assert report == tmp_path / "result.html" and errors.getvalue() == ""
    assert len(svgs(report.read_text(encoding="utf-8"))) == 3
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_child_still_loading_at_a_turn_is_stopped_and_goes_on_when_told(tmp_path):
    path = write(tmp_path, example_result())
    child = ReportChild.start()
    pid = child.process.pid
    child.pause()  # at once: it cannot have loaded matplotlib yet
    give_up = time.monotonic() + 5.0  # SIGSTOP lands when the child is next scheduled
    while psutil.Process(pid).status() != psutil.STATUS_STOPPED and time.monotonic() < give_up:
        time.sleep(0.01)
    assert psutil.Process(pid).status() == psutil.STATUS_STOPPED
    cpu = psutil.Process(pid).cpu_times()
    time.sleep(0.3)
    assert psutil.Process(pid).cpu_times() == cpu  # stopped: it takes nothing from a run
    report = draw_report_in_child(path, io.StringIO(), child=child)
    assert report is not None and len(svgs(report.read_text(encoding="utf-8"))) == 3


def test_a_child_that_draws_nothing_ends_with_the_grade():
    for pause in (False, True):
        child = ReportChild.start()
        process = psutil.Process(child.process.pid)
        if pause:
            child.pause()
        child.close()
        assert not process.is_running() or process.status() == psutil.STATUS_ZOMBIE


def drawing_children(marker: str):
    """The drawing children waiting to be told, of any parent, started with `marker` in
    their environment (`TOPOS_TEST_MARKER`): the suite runs on several workers at once,
    and another test's grade may start a child of its own meanwhile."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        command = process.info["cmdline"] or []
        if REPORT_MODULE in command and "--when-told" in command:
            with contextlib.suppress(psutil.Error):
                if process.environ().get("TOPOS_TEST_MARKER") == marker:
                    found.append(process)
    return [process for process in found if process.is_running() and process.status() != "zombie"]


def test_a_child_started_early_is_the_one_the_grade_takes_and_one_not_taken_is_ended(
    monkeypatch,
):
    monkeypatch.setenv("TOPOS_REPORT", "on")
    ReportChild.start_early()
    early = _Early.child
    assert early is not None and early.process.poll() is None
    assert ReportChild.start() is early and _Early.child is None
    early.close()
    ReportChild.start_early()
    process = psutil.Process(_Early.child.process.pid)
    ReportChild.end_early()
    assert _Early.child is None
    assert not process.is_running() or process.status() == psutil.STATUS_ZOMBIE


def test_a_grade_command_that_draws_no_report_leaves_no_drawing_child(tmp_path):
    marker = f"no-drawing-child-{os.getpid()}-{tmp_path.name}"
    for arguments in (["--steps", "0"], ["--routes", "nonesuch"]):
        finished = topos(
            "grade", *arguments, cwd=tmp_path, TOPOS_REPORT="on", TOPOS_TEST_MARKER=marker
        )
        assert finished.returncode == 2, finished.stderr
    assert drawing_children(marker) == []


def test_a_child_that_died_before_it_was_told_is_replaced_by_a_fresh_one(tmp_path):
    path = write(tmp_path, example_result())
    child = ReportChild.start()
    child.process.kill()
    child.process.wait()
    errors = io.StringIO()
    drawing = ReportDrawing(path, child)
    assert drawing.finish(errors) == tmp_path / "result.html" and errors.getvalue() == ""
    assert len(svgs((tmp_path / "result.html").read_text(encoding="utf-8"))) == 3

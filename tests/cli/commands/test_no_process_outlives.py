"""No child of a grade outlives it, however it ends: SIGHUP is handled as SIGTERM (the
partial result written), and after SIGKILL the kernel ends the workers and the report's
drawing child (PR_SET_PDEATHSIG), also the one started before the command line is read.
Real processes throughout."""

from __future__ import annotations

import json
import select
import signal
import time

import psutil
import pytest

from tests.cli.grading import TINY, start_topos


def _gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _all_gone(processes: list[psutil.Process], seconds: float = 5.0) -> list[psutil.Process]:
    """Those of `processes` still alive after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = [process for process in processes if not _gone(process)]
        if not alive:
            return []
        time.sleep(0.05)
    return alive


def _wait_for_line(process, fragment: str, seconds: float = 60.0) -> None:
    """Reads the grade's stderr until a line holds `fragment`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        readable, _, _ = select.select([process.stderr], [], [], 0.2)
        if readable:
            line = process.stderr.readline()
            assert line, "the grade ended early"
            if fragment in line:
                return
    raise AssertionError(f"{fragment!r} never appeared")


@pytest.mark.parametrize("signal_number", [signal.SIGHUP, signal.SIGKILL])
def test_no_child_outlives_a_grade_hung_up_or_killed(tmp_path, signal_number):
    result_path = tmp_path / "result.json"
    process = start_topos(
        "grade",
        "--workload",
        TINY + "hangs",
        "--steps",
        "6",
        "--json",
        str(result_path),
        "--timeout",
        "inf",
        cwd=tmp_path,
        TOPOS_REPORT="on",
    )
    try:
        _wait_for_line(process, "recorded: ready")
        time.sleep(0.3)  # the recorded worker now hangs at its failing step
        children = psutil.Process(process.pid).children(recursive=True)
        commands = [" ".join(child.cmdline()) for child in children]
        assert any("report_html" in command for command in commands), commands
        assert any("route_worker" in command or "worker" in command for command in commands)
        process.send_signal(signal_number)
        process.wait(timeout=15)
        assert _all_gone(children) == []
    finally:
        process.kill()
        process.communicate()
    if signal_number == signal.SIGHUP:
        assert process.returncode == 130
        result = json.loads(result_path.read_text())
        assert result["status"] == "interrupted"


@pytest.mark.parametrize("signal_number", [signal.SIGHUP, signal.SIGKILL])
def test_the_early_drawing_child_dies_with_a_grade_ended_as_it_starts(tmp_path, signal_number):
    process = start_topos("grade", "--steps", "1", cwd=tmp_path, TOPOS_REPORT="on")
    try:
        deadline = time.monotonic() + 20
        drawing = []
        while not drawing and time.monotonic() < deadline:
            drawing = [
                child
                for child in psutil.Process(process.pid).children(recursive=True)
                if "report_html" in " ".join(child.cmdline())
            ]
            time.sleep(0.01)
        assert drawing, "the drawing child never started"
        process.send_signal(signal_number)
        process.wait(timeout=15)
        assert _all_gone(drawing) == []
    finally:
        process.kill()
        process.communicate()

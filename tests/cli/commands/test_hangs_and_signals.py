"""Issue 11, hangs and signals, with real subprocesses: however a workload behaves, a grade
ends within its timeout plus a few seconds, an interrupt ends it within two, and the
result is written."""

from __future__ import annotations

import json
import signal
import time

import psutil
import pytest

from tests.cli.grading import TINY, grade_tiny, one_line_error, start_topos, topos


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_process_detached_by_the_workload_neither_hangs_the_grade_nor_outlives_it(tmp_path):
    pid_file = tmp_path / "detached.pid"
    started = time.monotonic()
    completed, result = grade_tiny(
        "detaches", tmp_path, TINY_DETACHED_PID_FILE=str(pid_file), timeout=40
    )
    assert completed.returncode == 0, completed.stderr
    assert time.monotonic() - started < 20
    assert [repeat["status"] for repeat in result["repeats"]] == ["ok", "ok"]
    assert result["repeats"][1]["facts"]["leftover_processes_killed"] == 1
    assert _gone(int(pid_file.read_text()))


def test_a_detached_process_does_not_stop_the_timeout(tmp_path):
    pid_file = tmp_path / "detached.pid"
    started = time.monotonic()
    completed, result = grade_tiny(
        "detaches_and_hangs",
        tmp_path,
        "--timeout",
        "3",
        TINY_DETACHED_PID_FILE=str(pid_file),
        timeout=40,
    )
    assert completed.returncode == 1, completed.stderr
    # Each run takes well under a second here; the hanging one ends at its 3 s timeout.
    assert time.monotonic() - started < 3 + 10
    assert result["repeats"][1]["status"] == "timed out"
    assert _gone(int(pid_file.read_text()))


def _start(tmp_path, workload, *arguments, **extra):
    return start_topos(
        "grade", "--workload", TINY + workload, "--steps", "6", *arguments, cwd=tmp_path, **extra
    )


def _wait_for_file(path, seconds=30.0):
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    time.sleep(0.2)  # the detached process is started; the worker now hangs


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_ends_a_grade_whose_workload_detached_a_process_within_two_seconds(
    tmp_path, signal_number
):
    pid_file = tmp_path / "detached.pid"
    result_path = tmp_path / "result.json"
    process = _start(
        tmp_path,
        "detaches_and_hangs",
        "--json",
        str(result_path),
        "--timeout",
        "inf",
        TINY_DETACHED_PID_FILE=str(pid_file),
    )
    _wait_for_file(pid_file)
    sent = time.monotonic()
    process.send_signal(signal_number)
    try:
        _, stderr = process.communicate(timeout=10)
    finally:
        process.kill()
    assert time.monotonic() - sent < 2.0
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    result = json.loads(result_path.read_text())
    assert result["status"] == "interrupted" and result["exit_status"] == 130
    assert _gone(int(pid_file.read_text()))


@pytest.mark.parametrize("timeout", ["inf", "1e300", "9.3e9"])
def test_a_timeout_beyond_any_clock_means_no_limit(tmp_path, timeout):
    completed, result = grade_tiny("tiny", tmp_path, "--timeout", timeout, steps=2)
    assert completed.returncode == 0, completed.stderr
    assert "Traceback" not in completed.stderr
    assert [repeat["status"] for repeat in result["repeats"]] == ["ok", "ok"]


@pytest.mark.parametrize("timeout", ["nan", "-inf", "-1"])
def test_a_timeout_that_is_no_positive_number_is_one_line_exit_2(tmp_path, timeout):
    completed = topos("grade", "--timeout", timeout, cwd=tmp_path)
    assert completed.returncode == 2
    assert "--timeout must be a positive number of seconds" in one_line_error(completed)

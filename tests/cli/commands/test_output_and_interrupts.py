"""Issue 11 with real subprocesses: an interrupt at any moment of any command is `topos:
interrupted` and exit 130, and output that cannot be printed (an ASCII encoding, a reader
that went away) never costs the result or the exit status."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from tests.cli.grading import TINY, TOPOS, environment, grade_tiny, start_topos, topos


def _handles_sigterm(pid: int) -> bool:
    """Whether process `pid` has installed its own SIGTERM handler (topos's first act)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            caught = next(line for line in status if line.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return False
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)))


def _interrupt_early(tmp_path, *arguments):
    """Runs `topos ARGUMENTS`, and sends SIGINT as soon as topos's own code runs (while
    it still imports the command-line framework); returns the process's outcome."""
    process = start_topos(*arguments, cwd=tmp_path)
    deadline = time.monotonic() + 20
    while not _handles_sigterm(process.pid):
        assert time.monotonic() < deadline and process.poll() is None, "topos never started"
        time.sleep(0.002)
    process.send_signal(signal.SIGINT)
    try:
        stdout, stderr = process.communicate(timeout=20)
    finally:
        process.kill()
    return process.returncode, stdout, stderr


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
@pytest.mark.parametrize(
    "arguments",
    [
        ["train", "--workload", TINY + "tiny", "--steps", "100000"],
        ["data", "info"],
        ["describe", "--workload", TINY + "tiny"],
    ],
)
def test_an_early_interrupt_of_any_command_is_one_line_exit_130(tmp_path, arguments):
    returncode, _, stderr = _interrupt_early(tmp_path, *arguments)
    assert returncode == 130, stderr
    assert stderr.strip().splitlines() == ["topos: interrupted"]


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
def test_an_early_interrupt_of_a_grade_still_writes_its_result(tmp_path):
    result_path = tmp_path / "result.json"
    returncode, _, stderr = _interrupt_early(
        tmp_path, "grade", "--workload", TINY + "tiny", "--json", str(result_path)
    )
    assert returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "topos: interrupted by SIGINT; partial results written" in stderr
    result = json.loads(result_path.read_text())
    assert result["status"] == "interrupted" and result["exit_status"] == 130
    assert result["interrupted"]["not_run"] == [["engine", 0], ["recorded", 0]]


def test_an_interrupt_while_topos_run_trains_is_one_line_exit_130(tmp_path):
    process = start_topos("train", "--workload", TINY + "tiny", "--steps", "1000000", cwd=tmp_path)
    try:
        assert process.stdout.readline().startswith("route engine:")
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 130
    assert stderr.strip().splitlines()[-1] == "topos: interrupted"
    assert "Traceback" not in stderr


@pytest.mark.parametrize("variable", ["PYTHONIOENCODING", "LC_ALL"])
def test_an_ascii_terminal_gets_ascii_spellings_from_grade_and_compare(tmp_path, variable):
    value = "ascii" if variable == "PYTHONIOENCODING" else "C"
    # LC_ALL=C alone is coerced to UTF-8 by Python; without coercion it is ASCII.
    extra = {variable: value, "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
    completed, result = grade_tiny("tiny", tmp_path, steps=3, **extra)
    assert completed.returncode == 0, completed.stderr
    assert "ms/step" in completed.stdout and "delta MiB" in completed.stdout
    assert result["status"] == "complete"
    compared = topos("compare", "result.json", "result.json", cwd=tmp_path, **extra)
    # One repeat of three steps proves no time difference either way: inconclusive (5).
    assert compared.returncode in (0, 5), compared.stderr
    assert compared.stdout.isascii() and "Traceback" not in compared.stderr
    # --json - keeps the result whole: the same JSON, its other characters escaped.
    # (remat's pairing with recorded puts a Δ in the summary.)
    to_stdout = topos(
        "grade", "--workload", TINY + "tiny", "--steps", "3", "--routes", "engine,recorded,remat",
        "--json", "-", cwd=tmp_path, **extra,
    )  # fmt: skip
    assert to_stdout.returncode == 0, to_stdout.stderr
    assert to_stdout.stdout.isascii()
    assert "Δ" in json.loads(to_stdout.stdout)["verdict"]["summary"]


def test_a_reader_that_goes_away_costs_neither_the_result_nor_the_exit_status(tmp_path):
    result_path = tmp_path / "result.json"
    command = ["grade", "--workload", TINY + "diverges", "-n", "6", "--json", str(result_path)]
    process = start_topos(*command, cwd=tmp_path)
    process.stdout.close()  # `| head -0`: nobody will read the table
    try:
        stderr = process.stderr.read()
        process.wait(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 1, stderr  # the grade's own status: a route met NaN
    assert f"results: {result_path}" in stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert json.loads(result_path.read_text())["exit_status"] == 1


def test_a_closed_standard_output_costs_neither_the_result_nor_the_exit_status(tmp_path):
    result_path = tmp_path / "result.json"
    completed = subprocess.run(
        [*TOPOS, "grade", "--workload", TINY + "tiny", "--steps", "3", "--json", str(result_path)],
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.close(1),  # `topos grade >&-`
    )
    assert completed.returncode == 0, completed.stderr
    assert f"results: {result_path}" in completed.stderr
    assert json.loads(result_path.read_text())["status"] == "complete"


def test_a_sigterm_as_a_report_ends_is_exit_130_never_death_by_the_signal(tmp_path):
    # Issue 43: once `topos report --png` had written its picture, the interpreter's
    # teardown (matplotlib's objects, half a second) ran with Python's default handlers
    # back in place, and a SIGTERM then killed it (status -15).
    from tests.cli.result_examples import example_result

    result = tmp_path / "result.json"
    result.write_text(json.dumps(example_result(repeats=3)))
    process = start_topos("report", str(result), "--png", str(tmp_path / "o.png"), cwd=tmp_path)
    try:
        assert process.stderr.readline().startswith("report: ")  # the picture is written
        time.sleep(0.05)  # into the teardown, were there one: no assertion on time
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    # Left already (0), or ended by the signal as any command is (130).
    assert process.returncode in (0, 130), (process.returncode, stderr)
    assert (tmp_path / "o.png").stat().st_size > 0

"""Issue 6 with real subprocesses: bad input, crashing, hanging and diverging routes,
interrupts, and results that are never lost or half-written."""

from __future__ import annotations

import json
import signal
import time

import psutil
import pytest

from tests.cli.grading import TINY, grade_tiny, one_line_error, start_topos, topos
from tests.datasets.writers import mnist_splits, write_mnist


def _failed_recorded_route(result):
    """Checks the engine route finished and returns the recorded route's repeat."""
    engine, recorded = result["repeats"]
    assert (engine["route"], engine["status"]) == ("engine", "ok")
    assert len(engine["loss_bits"]) == 6
    assert recorded["route"] == "recorded"
    # The steps before the failure are kept, and agree with engine's.
    assert recorded["loss_bits"] == engine["loss_bits"][:3]
    return recorded


def test_a_route_that_raises_at_step_3_is_failed_with_its_error_and_stderr(tmp_path):
    completed, result = grade_tiny("raises", tmp_path)
    assert completed.returncode == 1, completed.stderr
    recorded = _failed_recorded_route(result)
    assert recorded["status"] == "failed"
    first, *rest = recorded["detail"].splitlines()
    assert first == ("exit status 1: RuntimeError: the tiny workload fails at step 3 on purpose")
    assert rest[0].startswith("at ") and "tiny_workloads.py" in rest[0]
    assert "stderr:" in rest and rest[-1].startswith("RuntimeError")
    # The exception in one line, never the traceback's raw frames.
    assert not any(line.startswith((" ", "Traceback")) for line in rest), rest
    assert recorded["facts"]["error"]["kind"] == "crash"
    assert result["verdict"]["parity"]["status"] == "incomplete"
    assert "recorded repeat 1: failed: exit status 1: RuntimeError" in completed.stdout


def test_a_route_that_calls_os_exit_is_failed_with_its_exit_status(tmp_path):
    completed, result = grade_tiny("exits", tmp_path)
    assert completed.returncode == 1, completed.stderr
    recorded = _failed_recorded_route(result)
    assert recorded["status"] == "failed"
    assert recorded["detail"].startswith("exit status 3 after 3 of 6 steps")
    assert recorded["facts"]["exit"] == {"status": 3, "signal": None}


def test_a_route_that_hangs_is_killed_at_its_timeout(tmp_path):
    started = time.monotonic()
    # Generous enough for a busy machine to load the worker and reach step 3.
    completed, result = grade_tiny("hangs", tmp_path, "--timeout", "4")
    assert completed.returncode == 1, completed.stderr
    recorded = _failed_recorded_route(result)
    assert recorded["status"] == "timed out"
    assert recorded["detail"].startswith("timed out after 4 s, 3 of 6 steps done")
    assert recorded["facts"]["exit"]["signal"] == "SIGKILL"
    assert not psutil.pid_exists(recorded["facts"]["pid"])
    assert time.monotonic() - started < 20


def test_a_route_that_runs_out_of_address_space_is_failed_with_memory_error(tmp_path):
    completed, result = grade_tiny("hoards", tmp_path)
    assert completed.returncode == 1, completed.stderr
    recorded = _failed_recorded_route(result)
    assert recorded["status"] == "failed"
    assert recorded["detail"].startswith("exit status 1: MemoryError")
    assert "hoard.append" in recorded["detail"]


def test_a_loss_that_turns_nan_is_named_with_its_step(tmp_path):
    completed, result = grade_tiny("diverges", tmp_path)
    assert completed.returncode == 1, completed.stderr
    for repeat in result["repeats"]:
        assert repeat["status"] == "nonfinite"
        assert len(repeat["loss_bits"]) == 5 and repeat["final_loss"] == "nan"
        assert repeat["facts"]["nonfinite"]["step"] == 4
    # Both routes diverge alike: parity holds over the steps they ran.
    assert result["verdict"]["parity"]["status"] == "bit-identical"
    assert "loss not finite: engine at step 4, recorded at step 4" in completed.stdout


def test_a_recording_error_names_the_offending_expression_exit_2(tmp_path):
    completed, result = grade_tiny("misshapen", tmp_path)
    assert completed.returncode == 2
    line = one_line_error(completed)
    assert "ShapeError in your workload at " in line
    assert "tiny_workloads.py:" in line and "matmul: shapes [16, 64] and [8, 4]" in line
    # Found by recording once before any worker starts: no route ran, nothing written.
    assert result is None
    assert "engine" not in completed.stderr
    assert completed.stdout == ""


def test_a_missing_data_directory_is_one_line_exit_2(tmp_path):
    completed = topos("grade", "--data", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert completed.returncode == 2
    assert f"{tmp_path / 'nowhere'}: no such directory" in one_line_error(completed)


@pytest.mark.parametrize(
    ("damage", "fragment"),
    [
        ("empty", "holds neither"),
        ("truncated", "train-images-idx3-ubyte"),
    ],
)
def test_bad_data_files_are_named_in_one_line_exit_2(tmp_path, damage, fragment):
    folder = tmp_path / "mnist"
    folder.mkdir()
    if damage == "truncated":
        write_mnist(folder, mnist_splits((80, 10)))
        images = folder / "train-images-idx3-ubyte"
        images.write_bytes(images.read_bytes()[:-100])
        fragment = str(images)
    completed = topos(
        "grade",
        "--workload",
        "mnist",
        "--steps",
        "2",
        "--data",
        str(folder),
        "--json",
        str(tmp_path / "result.json"),
        cwd=tmp_path,
    )
    assert completed.returncode == 2, completed.stderr
    line = one_line_error(completed)
    assert str(folder) in line
    if damage == "truncated":
        assert fragment in line
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["status"] == "error" and result["repeats"][0]["facts"]["error"]["kind"] == "data"


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        (["--workload", "nonesuch"], "unknown workload 'nonesuch'"),
        (["--workload", "no_such_module:thing"], "cannot import 'no_such_module'"),
        (["--routes", "engine,sideways"], "unknown route 'sideways'"),
        (["--routes", "engine,engine"], "route 'engine' is named twice"),
        (["--steps", "0"], "--steps must be a whole number from 1 to 1,000,000, not 0"),
        (["--steps", "-3"], "--steps must be a whole number from 1 to 1,000,000, not -3"),
        (["--steps", "many"], "'--steps'"),
        (["--repeat", "0"], "--repeat must be a whole number from 1 to 1,000, not 0"),
        (["--threads", "0"], "--threads must be a whole number from 1 to 1,024, not 0"),
        (["--timeout", "0"], "--timeout must be a positive number of seconds"),
        (["--repeat", "100000000"], "--repeat must be a whole number from 1 to 1,000"),
        (["--steps", "9" * 400], "--steps must be a whole number from 1 to 1,000,000"),
        (["--threads", "5000"], "--threads must be a whole number from 1 to 1,024"),
        (["--routes", "remat", "--budget", "9" * 400 + "MiB"], "--budget"),
        (["--routes", "remat", "--budget", "9" * 400 + "%"], "--budget"),
        (["--tolerance", "speed=3%"], "--tolerance 'speed=3%'"),
        (
            ["--json", "/proc/no/such/place.json"],
            "--json /proc/no/such/place.json: cannot write it",
        ),
        (["--frobnicate"], "No such option: --frobnicate"),
    ],
)
def test_usage_errors_are_one_line_exit_2(tmp_path, arguments, fragment):
    completed = topos("grade", *arguments, cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    assert fragment in one_line_error(completed)


def test_an_unwritable_json_directory_is_refused_before_any_worker_starts(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        probe = locked / "probe"
        try:
            probe.write_text("")
        except PermissionError:
            pass
        else:
            pytest.skip("running as a user whom directory permissions do not stop")
        started = time.monotonic()
        completed = topos("grade", "--json", str(locked / "result.json"), cwd=tmp_path)
        assert completed.returncode == 2
        assert f"cannot write {locked / 'result.json'}" in one_line_error(completed)
        assert time.monotonic() - started < 10  # no cifar10 worker ran
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("not json at all", "is not a topos result (not JSON"),
        (json.dumps({"hello": "world"}), "is not a topos result (no schema)"),
        (json.dumps({"schema": "topos.grade/0"}), "has schema topos.grade/0"),
    ],
)
def test_a_baseline_that_is_not_a_topos_result_of_this_schema_is_exit_2(
    tmp_path, content, fragment
):
    baseline = tmp_path / "baseline.json"
    baseline.write_text(content)
    completed = topos("grade", "--baseline", str(baseline), cwd=tmp_path)
    assert completed.returncode == 2
    assert fragment in one_line_error(completed)


def test_a_baseline_of_another_workload_is_exit_2(tmp_path):
    completed, _ = grade_tiny("tiny", tmp_path, "--routes", "engine", steps=2)
    assert completed.returncode == 0, completed.stderr
    refused = topos(
        "grade", "--workload", "mnist", "--baseline", str(tmp_path / "result.json"), cwd=tmp_path
    )
    assert refused.returncode == 2
    assert f"is a result of workload {TINY}tiny, not mnist" in one_line_error(refused)


def _workers(grader, route):
    """The grader's live workers of `route`."""
    return [
        child
        for child in grader.children(recursive=True)
        if "--route" in _command_line(child) and route in _command_line(child)
    ]


def _start_hanging_grade(tmp_path, result_path, *options):
    """Starts a grade whose recorded route hangs; returns it and its worker once that hangs."""
    command = ["grade", "--workload", TINY + "hangs", "--steps", "6", "--json", str(result_path)]
    process = start_topos(*command, *options, cwd=tmp_path)
    grader = psutil.Process(process.pid)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        workers = _workers(grader, "recorded")
        # Held for its turn, the recorded worker idles too: only its hang counts, once
        # an engine run before it (loading beside it) has ended.
        earlier = "--routes" not in options and _workers(grader, "engine")
        if workers and not earlier:
            _wait_until_idle(workers[0], deadline)
            return process, workers[0]
        time.sleep(0.05)
    process.kill()
    raise AssertionError("the recorded worker never started")


def _command_line(process):
    """A process's command line; empty for one that has ended (a zombie not yet reaped)."""
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def _wait_until_idle(worker, deadline):
    """Waits until `worker` sleeps without using the CPU: it has reached the hang at step 3."""
    used = None
    while time.monotonic() < deadline:
        times = worker.cpu_times()
        now = times.user + times.system
        if now == used and worker.status() == psutil.STATUS_SLEEPING:
            return
        used = now
        time.sleep(0.5)
    raise AssertionError("the recorded worker never reached its hang")


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_ends_the_worker_writes_partial_results_and_exits_130(tmp_path, signal_number):
    result_path = tmp_path / "result.json"
    process, worker = _start_hanging_grade(tmp_path, result_path)
    process.send_signal(signal_number)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    # No worker survives, nor anything it started.
    assert not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE
    result = json.loads(result_path.read_text())
    name = signal.Signals(signal_number).name
    assert result["status"] == "interrupted" and result["exit_status"] == 130
    assert result["interrupted"] == {"signal": name, "not_run": []}
    engine, recorded = result["repeats"]
    assert engine["status"] == "ok"
    assert recorded["status"] == "interrupted" and len(recorded["loss_bits"]) == 3
    assert recorded["detail"] == f"interrupted by {name} after 3 of 6 steps"
    assert f"topos: interrupted by {name}; partial results written" in stderr
    assert "Traceback" not in stderr


def test_an_interrupt_also_ends_the_worker_loaded_for_the_next_turn(tmp_path):
    result_path = tmp_path / "result.json"
    process, worker = _start_hanging_grade(tmp_path, result_path, "--routes", "recorded,engine")
    (waiting,) = _workers(psutil.Process(process.pid), "engine")
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    for ended in (worker, waiting):
        assert not ended.is_running() or ended.status() == psutil.STATUS_ZOMBIE
    result = json.loads(result_path.read_text())
    assert result["interrupted"] == {"signal": "SIGINT", "not_run": [["engine", 0]]}
    assert [run["route"] for run in result["repeats"]] == ["recorded"]


def test_a_grader_killed_outright_leaves_no_worker_and_the_old_result_whole(tmp_path):
    result_path = tmp_path / "result.json"
    old = '{"the": "previous result"}\n'
    result_path.write_text(old)
    process, worker = _start_hanging_grade(tmp_path, result_path)
    process.kill()
    process.communicate(timeout=30)
    # The worker asked to die with its parent, so SIGKILL of the grader ends it too.
    try:
        worker.wait(timeout=10)
    except psutil.TimeoutExpired:
        worker.kill()
        raise AssertionError("the worker outlived its grader") from None
    # Results are written once, by rename: the old file is untouched, no temporary remains.
    assert result_path.read_text() == old
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []

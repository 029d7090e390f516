"""A route whose shards run in forked processes is measured whole: the worker's resident
set plus each child's private memory, at ready and at the peak, and the prediction
(which counts every shard's arena and buffers, wherever they live) holds to 2%."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.cli.grading import succeeded

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

TOLERANCE = 0.02


@pytest.mark.parametrize("route", ["engine", "recorded"])
def test_cifar10_counts_its_shard_process_and_is_predicted_within_two_percent(route, tmp_path):
    _, result = succeeded(
        "grade",
        "--workload",
        "cifar10",
        "--routes",
        route,
        "--steps",
        "30",
        cwd=tmp_path,
        timeout=300.0,
    )
    (run,) = result["repeats"]
    facts = run["facts"]
    children = facts["ready"]["shard_processes"]
    (child_ready,) = children["ready_private_bytes"]
    (child_peak,) = facts["shard_processes_peak_private_bytes"]
    parent_ready = children["parent_ready_rss_bytes"]
    parent_peak = max(facts["high_water_bytes"], facts["step_peak_rss_bytes"])
    # The route's figures are the parent's resident set plus the child's private memory.
    assert run["ready_rss_bytes"] == parent_ready + child_ready
    assert run["peak_rss_bytes"] == parent_peak + child_peak
    assert run["training_delta_bytes"] == (parent_peak - parent_ready) + (child_peak - child_ready)
    # The child's arena is counted: its delta is about half the plans' arenas.
    arena = facts["ready"]["step_memory"]["parts"]["arena"]
    assert child_peak - child_ready >= 0.45 * arena
    (prediction,) = result["memory_prediction"]
    measured = prediction["measured_training_delta_bytes"]
    predicted = prediction["predicted_training_bytes"]
    assert abs(measured - predicted) <= TOLERANCE * measured, prediction
    # The parent's samples count the child's private memory too (read every 100 ms), so
    # the timeline reaches the route's peak.
    assert facts["sampled_peak_rss_bytes"] >= 0.95 * run["peak_rss_bytes"]
    # No child outlived its worker.
    assert not facts["leftover_processes_killed"]


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_an_interrupted_or_killed_grade_leaves_no_shard_process(tmp_path, signal_number):
    import psutil

    process = _start_endless_grade(tmp_path)
    seen: list[psutil.Process] = []
    try:
        seen = _once_a_shard_process_runs(process)
        process.send_signal(signal_number)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    # Interrupted, the grade ends as interrupted; killed outright, the worker and its
    # shard process still die with it (each asked Linux to end it with its parent).
    assert process.returncode == (130 if signal_number != signal.SIGKILL else -9), stderr
    assert len(seen) >= 2  # the worker and its shard process
    _, alive = psutil.wait_procs(seen, timeout=30)
    assert alive == []


def test_a_timed_out_route_leaves_no_shard_process(tmp_path):
    import psutil

    process = _start_endless_grade(
        tmp_path, "--timeout", "6", "--json", str(tmp_path / "result.json")
    )
    seen: list[psutil.Process] = []
    try:
        seen = _once_a_shard_process_runs(process)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 1, stderr
    result = json.loads((tmp_path / "result.json").read_text())
    assert [run["status"] for run in result["repeats"]] == ["timed out"]
    _, alive = psutil.wait_procs(seen, timeout=30)
    assert alive == []


def _start_endless_grade(tmp_path, *options: str) -> subprocess.Popen:
    """A grade of cifar10's recorded route that would train a million steps."""
    from tests.cli.grading import start_topos

    command = ["grade", "--workload", "cifar10", "--routes", "recorded", "--steps", "1000000"]
    return start_topos(*command, *options, cwd=tmp_path, stdout=subprocess.DEVNULL)


def _once_a_shard_process_runs(process: subprocess.Popen) -> list:
    """Waits for the worker's forked shard (a grandchild of the grader); returns every
    process below the grader then."""
    import psutil

    grader = psutil.Process(process.pid)
    deadline = time.monotonic() + 120  # only so a failure cannot hang the tests
    while not _grandchildren(grader):
        assert process.poll() is None and time.monotonic() < deadline, "no shard process"
        time.sleep(0.05)
    return grader.children(recursive=True)


def _grandchildren(process) -> list:
    """The children of `process`'s children (passing over any that end meanwhile)."""
    import psutil

    found = []
    for child in process.children():
        try:
            found += child.children()
        except psutil.NoSuchProcess:
            continue
    return found


def test_the_grader_reads_the_shard_processes_named_at_ready():
    import os

    from topos.system import process_memory
    from topos_cli.worker.protocol import Ready, decode

    ready = decode('{"event": "ready", "shard_processes": {"pids": [12, 34]}}')
    assert ready.facts.shard_process_ids == [12, 34]
    # An event whose ids are no process ids is no event: stray output, not a crash.
    assert decode('{"event": "ready", "shard_processes": {"pids": [12, true, "x"]}}') is None
    assert decode('{"event": "ready", "shard_processes": null}').facts.shard_process_ids == []
    assert Ready().facts.shard_process_ids == []
    assert process_memory.private_bytes(os.getpid()) > 0
    assert process_memory.private_bytes(2**22 + 1) is None  # past pid_max: no such process

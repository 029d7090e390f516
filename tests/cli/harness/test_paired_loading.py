"""Two workers load at once, then warm up and train one at a time (`run_routes`)."""

from __future__ import annotations

import subprocess
import sys

import psutil

from tests.cli.grading import ROOT, TINY, environment
from tests.cli.harness.test_monitor import Recorder
from topos_cli.harness.monitor import WorkerMonitor
from topos_cli.harness.worker_environment import worker_environment
from topos_cli.harness.worker_request import WorkerRequest
from topos_cli.worker.protocol import WORKER_MODULE


def held(route: str, steps: int = 4, hold: bool = True) -> WorkerMonitor:
    return WorkerMonitor(
        WorkerRequest(TINY + "tiny", route, steps),
        worker_environment(1, environment()),
        Recorder(),
        hold=hold,
    )


def test_the_second_of_a_pair_loads_beside_the_first_and_waits_out_its_run():
    first, second = held("engine"), held("recorded")
    first.start()
    second.start()
    first_result = first.supervise(second)
    # The second had loaded before the first warmed up: nothing of its loading falls
    # inside the first's measured part.
    assert second.loaded_moment is not None and first.ready_moment is not None
    assert second.loaded_moment <= first.ready_moment
    second_result = second.supervise()
    assert first_result.status == second_result.status == "ok"
    # The first's end killed its own leftovers, never the other worker waiting its turn.
    assert first_result.facts.leftover_processes_killed == 0
    assert second_result.facts.held_seconds > 0
    assert second_result.facts.start_up_overlapped_seconds > 0
    # The wait is not the worker's own time.
    assert second_result.facts.ready_after_seconds < second_result.facts.held_seconds + (
        second_result.facts.wall_seconds
    )
    # The same losses as a worker that never waited.
    alone = held("recorded", hold=False).supervise()
    assert second_result.loss_bits == alone.loss_bits == first_result.loss_bits
    # A held worker's display hears of it from its turn on, and never of `loaded`.
    calls = second.observer.calls
    assert calls[0][0] == "started" and ("event", "loaded") not in calls
    assert calls[-1] == ("finished", "ok")


def test_a_held_worker_given_no_turn_ends_with_no_record():
    waiting = held("recorded")
    waiting.start()
    waiting.wait_loaded()
    assert waiting.loaded_moment is not None
    process = psutil.Process(waiting._worker.pid)
    waiting.abandon()
    assert waiting.result is None and waiting.observer.calls == []
    assert not process.is_running() or process.status() == psutil.STATUS_ZOMBIE


def worker(stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", WORKER_MODULE, "--workload", TINY + "tiny"]
    command += ["--route", "recorded", "--steps", "2", "--hold"]
    return subprocess.run(
        command, input=stdin, capture_output=True, cwd=ROOT, env=environment(), timeout=120
    )


def test_a_held_worker_trains_after_go_and_leaves_quietly_without_it():
    went = worker(b"go\n")
    events = [line.split(b'"')[3] for line in went.stdout.splitlines()]
    assert went.returncode == 0
    assert events == [b"loaded", b"ready", b"step", b"step", b"done"]
    left = worker(b"")
    assert left.returncode == 1
    assert [line.split(b'"')[3] for line in left.stdout.splitlines()] == [b"loaded"]

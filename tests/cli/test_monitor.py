"""WorkerMonitor on real worker processes of the tiny workloads."""

from __future__ import annotations

import psutil

from tests.cli.grading import TINY, environment
from topos_cli.monitor import WorkerMonitor, WorkerObserver, WorkerRequest, worker_environment
from topos_cli.verdict import RepeatResult


class Recorder(WorkerObserver):
    """Keeps what a display would be told."""

    def __init__(self):
        self.calls = []
        self.samples = 0

    def started(self, request, pid):
        self.calls.append(("started", pid))

    def event(self, request, event):
        self.calls.append(("event", event["event"]))

    def sampled(self, request, rss_bytes):
        self.samples += 1

    def finished(self, request, result):
        self.calls.append(("finished", result["status"]))


def monitor(workload, route="recorded", steps=5, **request):
    return WorkerMonitor(
        WorkerRequest(TINY + workload, route, steps, **request),
        worker_environment(1, environment()),
        Recorder(),
    )


def test_a_run_reports_every_step_and_its_memory_as_a_repeat_result():
    watched = monitor("tiny", steps=5, repeat=2)
    result = watched.run()
    assert result is watched.result
    repeat = RepeatResult.from_dict(result)  # the verdict's own reader accepts it
    assert (repeat.route, repeat.repeat, repeat.status) == ("recorded", 2, "ok")
    assert len(repeat.loss_bits) == len(repeat.step_seconds) == 5
    assert repeat.training_delta_bytes == repeat.peak_rss_bytes - repeat.ready_rss_bytes
    facts = result["facts"]
    assert facts["ready"]["warm_up_seconds"] == result["first_step_seconds"] > 0
    assert facts["ready"]["numerics"]["environment"]["OMP_NUM_THREADS"] == "1"
    assert facts["stderr_tail"] == [] and facts["error"] is None
    calls = watched.observer.calls
    assert calls[0][0] == "started" and calls[-1] == ("finished", "ok")
    assert [call for call in calls if call[0] == "event"] == [
        ("event", "ready"),
        *[("event", "step")] * 5,
        ("event", "done"),
    ]
    assert watched.observer.samples == facts["rss_timeline"]["samples"] > 0
    assert not psutil.pid_exists(facts["pid"])  # reaped, not left a zombie


def test_a_worker_error_before_ready_is_kept_with_its_kind():
    result = monitor("no_such_attribute").run()
    assert result["status"] == "failed" and result["loss_bits"] == []
    error = result["facts"]["error"]
    assert error["kind"] == "workload" and error["type"] == "WorkloadNotFoundError"
    assert result["detail"].startswith("exit status 1: WorkloadNotFoundError: workload ")
    assert result["facts"]["ready"] is None and result["peak_rss_bytes"] is None


def test_a_timeout_kills_the_worker_and_says_how_far_it_got():
    result = monitor("hangs", steps=6, timeout=3.5).run()
    assert result["status"] == "timed out"
    assert result["detail"].startswith("timed out after 3.5 s, 3 of 6 steps done")
    assert result["facts"]["exit"] == {"status": None, "signal": "SIGKILL"}

"""WorkerMonitor on real worker processes of the tiny workloads."""

from __future__ import annotations

import numpy as np
import psutil
import pytest
from threadpoolctl import threadpool_limits

from tests.cli import tiny_workloads
from tests.cli.grading import TINY, environment
from topos.training import RouteProgram, Training, step_memory
from topos_cli.harness.monitor import WorkerMonitor
from topos_cli.harness.worker_environment import worker_environment
from topos_cli.harness.worker_observer import WorkerObserver
from topos_cli.harness.worker_request import WorkerRequest
from topos_cli.result.repeat import ExitFacts, Repeat


class Recorder(WorkerObserver):
    """Keeps what a display would be told."""

    def __init__(self):
        self.calls = []
        self.samples = 0

    def started(self, request, pid):
        self.calls.append(("started", pid))

    def event(self, request, event):
        self.calls.append(("event", event.name))

    def sampled(self, request, rss_bytes):
        self.samples += 1

    def finished(self, request, result):
        self.calls.append(("finished", result.status))


def monitor(workload, route="recorded", steps=5, **request):
    return WorkerMonitor(
        WorkerRequest(TINY + workload, route, steps, **request),
        worker_environment(1, environment()),
        Recorder(),
    )


def test_a_run_reports_every_step_and_its_memory_as_a_repeat_result():
    watched = monitor("tiny", steps=5, repeat=2)
    result = watched.supervise()
    assert result is watched.result
    repeat = Repeat.from_json(result.to_json())  # the verdict's own reader accepts it
    assert (repeat.route, repeat.repeat, repeat.status) == ("recorded", 2, "ok")
    assert len(repeat.loss_bits) == len(repeat.step_seconds) == 5
    assert repeat.training_delta_bytes == repeat.peak_rss_bytes - repeat.ready_rss_bytes
    facts = result.facts
    assert facts.ready.warm_up_seconds == result.first_step_seconds > 0
    assert facts.ready.numerics.environment["OMP_NUM_THREADS"] == "1"
    assert facts.stderr_tail == [] and facts.error is None
    calls = watched.observer.calls
    assert calls[0][0] == "started" and calls[-1] == ("finished", "ok")
    assert [call for call in calls if call[0] == "event"] == [
        ("event", "ready"),
        *[("event", "step")] * 5,
        ("event", "done"),
    ]
    assert watched.observer.samples == facts.rss_timeline.samples > 0
    assert not psutil.pid_exists(facts.pid)  # reaped, not left a zombie


def test_a_worker_error_before_ready_is_kept_with_its_kind():
    result = monitor("no_such_attribute").supervise()
    assert result.status == "failed" and result.loss_bits == ()
    error = result.facts.error
    assert error.kind == "workload" and error.type == "WorkloadNotFoundError"
    assert result.detail.startswith("exit status 1: WorkloadNotFoundError: workload ")
    assert result.facts.ready is None and result.peak_rss_bytes is None


def test_a_timeout_kills_the_worker_and_says_how_far_it_got():
    result = monitor("hangs", steps=6, timeout=3.5).supervise()
    assert result.status == "timed out"
    assert result.detail.startswith("timed out after 3.5 s, 3 of 6 steps done")
    assert result.facts.exit == ExitFacts(status=None, signal="SIGKILL")


def live_volume_of(workload, route):
    """The live-volume figures a worker of `workload` should report: every shard's plan
    runs at once, so each figure is the sum over the shards' plans."""
    program = RouteProgram(workload, route)
    plans = program.plans
    itemsize = program.network.dtype.itemsize
    loss = program.network.index(program.recording.loss, "test")
    backward = sum(plan.backward_peak_bytes(loss) for plan in plans if route == "engine")
    return program.shards, {
        "peak_elements": sum(plan.peak for plan in plans),
        "peak_bytes": sum(plan.peak for plan in plans) * itemsize,
        "peak_node": program.plan.live.peak_node,
        "retain_all_elements": sum(plan.retain_all for plan in plans),
        "retain_all_bytes": sum(plan.retain_all for plan in plans) * itemsize,
        "arena_bytes": sum(plan.arena_bytes for plan in plans),
        "root_bytes": sum(plan.root_bytes for plan in plans),
        "backward_peak_bytes": backward,
        "plan_training_bytes": sum(plan.predicted_training_bytes for plan in plans),
        "predicted_training_bytes": step_memory(
            program, workload.optimizer(), heap_threshold=65536
        ).total,
    }


@pytest.mark.parametrize(("workload", "route"), [("tiny", "recorded"), ("sharded", "engine")])
def test_ready_reports_the_shards_and_the_memory_of_every_shards_plan(workload, route):
    steps = 3
    result = monitor(workload, route=route, steps=steps).supervise()
    assert result.status == "ok", result.detail
    ready = result.facts.ready.to_json()
    shards, live_volume = live_volume_of(getattr(tiny_workloads, workload), route)
    assert (ready["shards"], shards) == ({"tiny": 1, "sharded": 2}[workload],) * 2
    assert ready["live_volume"] == live_volume
    # The whole step's parts (as the worker's malloc places them), which add up to the
    # prediction; the peak is the larger of the worker's two readings.
    program = RouteProgram(getattr(tiny_workloads, workload), route)
    expected = step_memory(program, program.workload.optimizer(), heap_threshold=65536)
    assert ready["step_memory"] == expected.to_json()
    assert sum(ready["step_memory"]["parts"].values()) == live_volume["predicted_training_bytes"]
    readings = (result.facts.high_water_bytes, result.facts.step_peak_rss_bytes)
    assert result.peak_rss_bytes == max(readings) and min(readings) > 0
    assert (live_volume["backward_peak_bytes"] > 0) == (route == "engine")
    # The worker trains the step Training takes in this process (sharded or not), with
    # one BLAS thread as the worker was started.
    training = Training(
        getattr(tiny_workloads, workload), route, tiny_workloads.load_dataset(None), steps
    )
    with threadpool_limits(limits=1, user_api="blas"):
        expected = [int(training.step(step).view(np.uint32)) for step in range(steps)]
    assert list(result.loss_bits) == expected


def test_a_failure_detail_keeps_the_exception_not_the_traceback_frames():
    from topos_cli.harness.worker_stderr import without_traceback_frames

    tail = [
        "loading the workload",
        "Traceback (most recent call last):",
        '  File "/x/shard_processes.py", line 220, in _answer',
        '    raise ShardProcessError(f"shard {child.shard}\'s process failed: {message}")',
        "    ^^^^^^^^^^^^^^^^^^^^^^^^",
        "During handling of the above exception, another exception occurred:",
        "topos.training.shard_processes.ShardProcessError: shard 1's process failed: boom",
    ]
    assert without_traceback_frames(tail) == [
        "loading the workload",
        "topos.training.shard_processes.ShardProcessError: shard 1's process failed: boom",
    ]

"""A grade lowers remat once, in a planning child before any worker, and each remat
worker rebuilds the plan it chose (`topos_cli.harness.lowered_schedules`): on a GRU
written as a user writes one, the worker's plan is the search's (the same bytes and
recomputations), its ready facts and line say the child's seconds, and it trains
bit-identically with recorded. A run of `--against`'s checkout is given no schedule,
and a child that cannot tell leaves every worker to search."""

from __future__ import annotations

from dataclasses import replace

from tests.cli.grading import succeeded
from topos_cli.harness.grade_preparation import GradeOptions, PreparedGrade
from topos_cli.harness.lowered_schedules import PlannedRemat, attach_schedules, plan_remat
from topos_cli.harness.worker_request import WorkerRequest
from topos_cli.worker.protocol import WorkerCommand

GRU = "tests.support.user_models:gru_workload"


def test_a_grus_remat_worker_rebuilds_the_plan_the_planning_child_chose(tmp_path):
    from topos.training import RouteProgram
    from topos.training.route_program import DEFAULT_BUDGET
    from topos.workloads import resolve

    completed, result = succeeded(
        "grade",
        "--workload",
        GRU,
        "--routes",
        "recorded,remat",
        "--steps",
        "3",
        cwd=tmp_path,
        timeout=180.0,
    )
    assert result["verdict"]["parity"]["status"] == "bit-identical"
    remat = result["routes"]["remat"]
    assert isinstance(remat["planning_seconds"], float)
    assert result["routes"]["recorded"]["planning_seconds"] is None
    assert "in the planning child" in completed.stderr
    # The plan the worker ran is the one a search under the default budget chooses.
    workload = resolve(GRU)
    workload = workload.fitted(workload.dataset(None))
    searched = RouteProgram(workload, "recorded", shard_processes=False).remat_plan(DEFAULT_BUDGET)
    assert remat["remat"]["planned_bytes"] == searched.planned_bytes
    assert remat["remat"]["recomputations"] == searched.recomputations
    assert remat["remat"]["floor_bytes"] == searched.sought_floor_bytes


def test_the_planning_child_writes_a_schedule_per_budget_and_refuses_none(tmp_path):
    planned = plan_remat(GRU, None, ["default", "100%", "1B"], str(tmp_path))
    assert set(planned.schedules) == {"default", "100%"}  # 1 byte is below the floor
    assert all(path.startswith(str(tmp_path)) for path in planned.schedules.values())
    assert set(planned.plans) == {"default", "100%"}


def _preparation(requests: list[WorkerRequest]) -> PreparedGrade:
    return PreparedGrade(GradeOptions(workload=GRU), None, "-", False, None, None, requests, {})


def test_only_this_checkouts_remat_runs_get_a_schedule():
    own = WorkerRequest(GRU, "remat", 3)
    theirs = replace(own, checkout="/elsewhere")
    recorded = WorkerRequest(GRU, "recorded", 3)
    budgeted = WorkerRequest(GRU, "remat", 3, budget="floor")
    planned = PlannedRemat(
        {"default": "a", "floor": "b"}, {"default": "/tmp/x.json", "floor": "/tmp/y.json"}
    )
    preparation = attach_schedules(_preparation([own, theirs, recorded, budgeted]), planned)
    assert [request.remat_schedule for request in preparation.requests] == [
        "/tmp/x.json",
        None,
        None,
        "/tmp/y.json",
    ]
    # Told nothing (the child failed or timed out): every worker searches.
    untold = attach_schedules(_preparation([own, budgeted]), PlannedRemat())
    assert [request.remat_schedule for request in untold.requests] == [None, None]


def test_the_worker_reads_its_schedule_option_back():
    command = WorkerCommand(GRU, "remat", 3, budget="floor", remat_schedule="/tmp/s.json")
    assert WorkerCommand.parse(command.arguments()[2:]) == command
    # Said only when given: an older checkout's worker knows no such option.
    assert "--remat-schedule" not in WorkerCommand(GRU, "remat", 3).arguments()


def test_a_schedule_is_read_as_every_file_the_command_reads(tmp_path, monkeypatch):
    # A regular file and no more than a bound: a FIFO put in its place would block a
    # plain read for ever, an oversized file would be read whole.
    import os

    import pytest

    from topos.errors import GraphError
    from topos_cli.worker import route_worker

    schedule = tmp_path / "remat-schedule-0.json"
    schedule.write_text("x" * 100, encoding="utf-8")
    command = WorkerCommand(GRU, "remat", 3, budget="floor", remat_schedule=str(schedule))
    assert route_worker.lowered_schedule(command) == "x" * 100
    monkeypatch.setattr(route_worker, "LARGEST_SCHEDULE_BYTES", 99)
    with pytest.raises(GraphError, match="over 99 bytes"):
        route_worker.lowered_schedule(command)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(GraphError, match="is a FIFO"):
        route_worker.lowered_schedule(
            WorkerCommand(GRU, "remat", 3, budget="floor", remat_schedule=str(fifo))
        )

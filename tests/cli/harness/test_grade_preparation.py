"""What `topos grade` decides before a worker starts: order, environment, validation."""

import pytest

from topos_cli.harness.grade_preparation import GradeOptions, interleaved_order, prepare
from topos_cli.harness.route_runner import usage_error_of
from topos_cli.harness.worker_environment import worker_environment
from topos_cli.harness.worker_request import WorkerRequest
from topos_cli.result.repeat import Repeat
from topos_cli.shared.errors import ToposUsageError


def test_repeats_interleave_in_a_balanced_order():
    assert interleaved_order(("engine", "recorded"), 1) == [("engine", 0), ("recorded", 0)]
    assert interleaved_order(("engine", "recorded"), 3) == [
        ("engine", 0),
        ("recorded", 0),
        ("recorded", 1),
        ("engine", 1),
        ("engine", 2),
        ("recorded", 2),
    ]
    assert interleaved_order(("recorded",), 2) == [("recorded", 0), ("recorded", 1)]


def test_the_worker_environment_sets_threads_and_the_mmap_threshold_only():
    machine = {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "262144", "PATH": "/bin"}
    environment = worker_environment(3, machine)
    assert environment["OPENBLAS_NUM_THREADS"] == "3"
    assert environment["OMP_NUM_THREADS"] == environment["MKL_NUM_THREADS"] == "3"
    assert environment["MALLOC_MMAP_THRESHOLD_"] == "65536"
    # The machine's own OpenBLAS tuning is passed through untouched.
    assert environment["OPENBLAS_CORETYPE"] == "Haswell"
    assert environment["OPENBLAS_L2_SIZE"] == "262144"
    untouched = worker_environment(None, {"MALLOC_MMAP_THRESHOLD_": "1"})
    assert untouched["MALLOC_MMAP_THRESHOLD_"] == "1"
    assert "OPENBLAS_NUM_THREADS" not in untouched


def test_the_worker_command_runs_this_interpreter():
    request = WorkerRequest("cifar10", "engine", 5, data="/data", repeat=1, timeout=9.0)
    command = request.command()
    assert command[1:3] == ["-m", "topos_cli.worker"]
    assert command[3:] == [
        "--workload", "cifar10", "--route", "engine", "--steps", "5", "--data", "/data"
    ]  # fmt: skip


def test_prepare_plans_the_runs_and_the_result_path(tmp_path):
    preparation = prepare(
        GradeOptions(steps=4, repeat=2, json_path=str(tmp_path / "out.json"), threads=2)
    )
    assert [(request.route, request.repeat) for request in preparation.requests] == [
        ("engine", 0),
        ("recorded", 0),
        ("recorded", 1),
        ("engine", 1),
    ]
    assert all(request.steps == 4 and request.data is None for request in preparation.requests)
    assert preparation.result_path == str(tmp_path / "out.json")
    assert preparation.environment["OMP_NUM_THREADS"] == "2"


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        (GradeOptions(routes=()), "names no route"),
        (GradeOptions(routes=("engine", "adjoint")), "unknown route 'adjoint'"),
        (GradeOptions(steps=True), "--steps"),
        (GradeOptions(timeout=-1.0), "--timeout"),
        (GradeOptions(json_path="-", github_benchmark="-"), "cannot both go to standard output"),
    ],
)
def test_prepare_refuses_bad_options(options, fragment):
    with pytest.raises(ToposUsageError) as caught:
        prepare(options)
    assert fragment in str(caught.value)


def test_only_data_and_workload_errors_before_ready_are_usage_errors():
    def run(kind, ready=None, status="failed"):
        error = {"kind": kind, "type": "DataError", "message": "/d/x: truncated", "where": ""}
        return Repeat("engine", 0, status, facts={"error": error, "ready": ready})

    assert usage_error_of(run("data"), "mnist") == "/d/x: truncated"
    assert usage_error_of(run("workload"), "mnist") == "/d/x: truncated"
    assert usage_error_of(run("crash"), "mnist") is None
    assert usage_error_of(run("data", ready={"route": "engine"}), "mnist") is None
    assert usage_error_of(Repeat("engine", 0, "ok"), "mnist") is None

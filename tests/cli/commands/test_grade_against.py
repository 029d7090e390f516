"""`topos grade --against`: another checkout's routes graded beside this one's.

The second checkout is HEAD's files unpacked in a temporary directory; the tests rewrite
its `tests/cli/tiny_workloads.py` so that its code, and only its code, trains faster or
other bits (`paced`), which shows that its workers ran its code.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.cli.grading import ROOT, grade_tiny, one_line_error, start_topos
from tests.support.scratch_project import (
    PROJECT_WORKLOAD,
    change,
    grade_project,
    make_project,
    project_pythonpath,
    run_git,
)
from topos_cli.harness.grade_preparation import GradeOptions, plan_against, prepare
from topos_cli.harness.other_checkout import OtherCheckout


def _git(*arguments: str) -> str:
    return subprocess.run(
        ["git", *arguments], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture
def second_checkout(tmp_path: Path):
    """HEAD's files, unpacked from `git archive` into a temporary directory: a checkout
    made by reading this repository, never by writing to it (a worktree would add
    itself to the repository the tests run from)."""
    path = tmp_path / "other"
    path.mkdir()
    archive = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as unpacked:
        unpacked.extractall(path, filter="data")
    return path


def _rewrite(checkout: Path, old: str, new: str) -> None:
    workloads = checkout / "tests" / "cli" / "tiny_workloads.py"
    text = workloads.read_text()
    assert old in text
    workloads.write_text(text.replace(old, new))


def test_a_faster_checkout_with_other_bits_makes_this_one_a_regression(
    second_checkout: Path, tmp_path: Path
):
    # The other checkout pauses not at all, and shifts its weights: this one is slower by
    # 20 ms a step, and the two train different bits (said, not an error).
    _rewrite(second_checkout, "PACED_SECONDS = 0.02", "PACED_SECONDS = 0.0")
    _rewrite(second_checkout, "PACED_SHIFT = 0.0", "PACED_SHIFT = 1e-3")
    # Three repeats a side: the repeat is the unit of evidence, and fewer are inconclusive.
    completed, result = grade_tiny(
        "paced", tmp_path, "--against", str(second_checkout), "--repeat", "3", steps=8,
        timeout=300,
    )  # fmt: skip
    # On a quiet machine a regression (4); beside other work, possibly too disturbed to
    # judge (5) — never "no regression", and never a claim from disturbed steps.
    assert completed.returncode in (4, 5), completed.stderr
    assert "Traceback" not in completed.stderr
    # This checkout's own routes still agree bit for bit: the verdict is theirs alone.
    assert result["verdict"]["parity"]["status"] == "bit-identical"
    assert {run["route"] for run in result["repeats"]} == {"engine", "recorded"}
    against = result["against"]
    assert {run["route"] for run in against["repeats"]} == {"engine@against", "recorded@against"}
    assert result["settings"]["order"][:4] == [
        ["engine", 0],
        ["engine@against", 0],
        ["recorded", 0],
        ["recorded@against", 0],
    ]
    assert len(result["settings"]["order"]) == 12
    assert against["checkout"]["path"] == str(second_checkout)
    routes = against["comparison"]["routes"]
    for route in routes:
        time = route["time"]
        if time["outcome"] == "inconclusive":
            assert time["inconclusive_because"] == "disturbed", time["reason"]
        else:
            assert time["outcome"] == "slower" and time["lower"] > 1.1, time["reason"]
    assert [route["bits"]["status"] for route in routes] == ["different", "different"]
    assert against["comparison"]["exit_status"] == completed.returncode
    assert "loss bits differ from step 0" in completed.stdout
    if completed.returncode == 4:
        assert "regression in" in completed.stdout


def test_a_git_ref_of_the_project_is_graded_in_a_worktree_that_is_removed(tmp_path: Path):
    # A project of one's own whose pull request changes its README only: the same code.
    project = tmp_path / "project"
    base = make_project(project)
    change(project, "docs")
    completed, result = grade_project(project, "--against", "main", "--routes", "recorded")
    # The same code: no bits differ, and one repeat a side is never judged a regression.
    assert completed.returncode in (0, 5), completed.stderr
    against = result["against"]
    assert against["checkout"]["temporary_worktree"] is True
    assert against["checkout"]["commit"] == base
    (route,) = against["comparison"]["routes"]
    assert route["bits"]["status"] == "identical"
    assert "identical loss bits" in completed.stdout
    # No worktree of a grade is left behind, in the project or on disk.
    assert "topos-against-" not in run_git("worktree", "list", cwd=project)
    assert not Path(against["checkout"]["path"]).exists()


@pytest.mark.parametrize("against", ["no-such-ref-of-topos", "."])
def test_a_bad_path_or_ref_is_one_line_and_exit_2_before_any_worker(tmp_path: Path, against: str):
    completed, result = grade_tiny("tiny", tmp_path, "--against", against)
    assert completed.returncode == 2
    assert "--against" in one_line_error(completed)
    assert result is None
    assert "started (worker" not in completed.stderr


def test_the_runs_of_both_checkouts_alternate_in_a_balanced_order(tmp_path: Path):
    preparation = prepare(
        GradeOptions(
            workload="mnist",
            steps=3,
            repeat=2,
            json_path=str(tmp_path / "r.json"),
            warmup=0,
        )
    )
    other = OtherCheckout("main", str(tmp_path), None, True, holds=False, warms_up=False)
    requests = plan_against(preparation, other).requests
    assert [(request.label, request.repeat) for request in requests] == [
        ("engine", 0),
        ("engine@against", 0),
        ("recorded", 0),
        ("recorded@against", 0),
        ("recorded@against", 1),
        ("recorded", 1),
        ("engine@against", 1),
        ("engine", 1),
    ]
    theirs = [request for request in requests if request.checkout is not None]
    assert {request.checkout for request in theirs} == {str(tmp_path)}
    # Same steps, data and warm-up on both sides; an older worker is not held.
    assert {(request.steps, request.data, request.warmup) for request in requests} == {(3, None, 0)}
    assert not any(request.holds for request in theirs)


def _runs(route: str, seconds: float, repeats: int) -> list:
    """Quiet runs of `route` at `seconds` a step (a little apart), CPU explaining the wall."""
    from topos_cli.result.repeat import Repeat

    runs = []
    for repeat in range(repeats):
        steps = [seconds * (1 + 0.003 * repeat + 0.002 * (step % 3)) for step in range(12)]
        runs.append(
            Repeat(
                route,
                repeat,
                "ok",
                (0x3F800000,) * 12,
                tuple(steps),
                step_cpu_seconds=tuple(steps),
            )
        )
    return runs


def test_the_checkouts_time_is_judged_by_the_one_time_module():
    from topos_cli.judge.against import compare_checkouts, time_phrase
    from topos_cli.judge.time_judgement import INCONCLUSIVE, SLOWER, WITHIN

    slower = compare_checkouts(
        _runs("recorded", 0.020, 3), _runs("recorded@against", 0.010, 3), other_name="main"
    )
    (route,) = slower.routes
    assert route.time.outcome == SLOWER and route.time.lower > 1.1
    assert slower.exit_status == 4 and "3 repeats each" in time_phrase(route.time)
    same = compare_checkouts(
        _runs("recorded", 0.010, 3), _runs("recorded@against", 0.010, 3), other_name="main"
    )
    assert same.routes[0].time.outcome == WITHIN and same.exit_status == 0
    # One repeat a side is no evidence of a difference: inconclusive, exit 5, never 4.
    thin = compare_checkouts(
        _runs("recorded", 0.020, 1), _runs("recorded@against", 0.010, 1), other_name="main"
    )
    assert thin.routes[0].time.outcome == INCONCLUSIVE and thin.exit_status == 5


def test_an_interrupted_grade_removes_its_worktree(tmp_path: Path):
    project = tmp_path / "project"
    make_project(project)
    change(project, "sleep")  # 30 ms a step on this side: 200 steps outlast the signal
    result_path = tmp_path / "result.json"
    process = start_topos(
        "grade",
        "--workload",
        PROJECT_WORKLOAD,
        "--steps",
        "200",
        "--against",
        "main",
        "--json",
        str(result_path),
        cwd=project,
        stdout=subprocess.DEVNULL,
        PYTHONPATH=project_pythonpath(),
    )
    try:
        # Plain progress on a pipe: the first worker's start is a line of its own.
        for line in process.stderr:
            if "started (worker" in line:
                break
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    result = json.loads(result_path.read_text())
    assert result["status"] == "interrupted"
    assert result["against"]["checkout"]["temporary_worktree"] is True
    assert not Path(result["against"]["checkout"]["path"]).exists()
    assert "topos-against-" not in run_git("worktree", "list", cwd=project)


def test_runs_of_an_older_worker_without_its_newer_figures_are_still_compared():
    from topos_cli.judge.against import compare_checkouts
    from topos_cli.result.repeat import Repeat

    bits = (0x3F800000, 0x3F700000, 0x3F600000)
    this = [Repeat("recorded", 0, "ok", bits, (0.02, 0.02, 0.02), None, 100, 200)]
    # An older worker: no peak, no ready memory, no facts; one loss bit differs at step 2.
    older = [Repeat("recorded@against", 0, "ok", (*bits[:2], 0x3F600001), (0.01,) * 3)]
    (route,) = compare_checkouts(this, older, other_name="main").routes
    assert [change.status for change in route.memory] == ["missing", "missing"]
    assert route.bits.status == "different" and route.bits.first_difference == 2
    # One run a side, without CPU times: compared, and found too thin to judge.
    assert route.time.outcome == "inconclusive" and route.time.inconclusive_because == "thin"
    alone = compare_checkouts(this, [], other_name="main").routes[0]
    assert alone.time.outcome == "inconclusive" and alone.bits.status == "not compared"


def test_the_other_sides_paths_map_the_project_into_its_checkout(tmp_path: Path):
    from topos_cli.harness.other_checkout import side_paths
    from topos_cli.result.worker_facts import CodeFacts

    project, checkout, elsewhere = tmp_path / "project", tmp_path / "base", tmp_path / "lib"
    for folder in (project / "src" / "pkg", project / "tools", checkout / "tools", elsewhere):
        folder.mkdir(parents=True)
    code = CodeFacts(
        workload_module="pkg.workloads",
        workload_file=str(project / "src" / "pkg" / "workloads.py"),
        workload_root=str(project / "src"),
        topos_file=str(elsewhere / "topos" / "__init__.py"),
    )
    other = OtherCheckout("main", str(checkout), "0" * 40, True, True, True, str(project))
    # Run from the project's tools/ with a relative entry into the project and an absolute
    # one outside it (issue 39: PYTHONPATH=. failed on the other side).
    environment = {"PYTHONPATH": os.pathsep.join(["..", str(elsewhere)])}
    paths = side_paths(other, environment, project / "tools", code)
    assert paths.pythonpath.split(os.pathsep) == [
        str(checkout / "src"),
        str(checkout),
        str(elsewhere),
    ]
    assert paths.working_directory == str(checkout / "tools")
    # Topos grading itself: the checkout holds its own topos, first on the path.
    own = OtherCheckout("main", str(checkout), None, True, True, True, str(project), own_topos=True)
    assert side_paths(own, {}, project, None).pythonpath == str(checkout)


def test_a_workload_file_named_by_an_absolute_path_is_the_checkouts_on_its_side(tmp_path: Path):
    # Issue 48: `--against main --workload /abs/project/model.py` graded the same file on
    # both sides and was refused as "same code"; a relative path was already mapped.
    from topos_cli.harness.other_checkout import side_paths

    project, checkout = tmp_path / "project", tmp_path / "base"
    for folder in (project / "models", checkout / "models"):
        folder.mkdir(parents=True)
    other = OtherCheckout("main", str(checkout), "0" * 40, True, True, True, str(project))
    model = project / "models" / "model.py"

    def workload_of(name: str) -> str | None:
        return side_paths(other, {}, project, None, name).workload

    assert workload_of(str(model)) == str(checkout / "models" / "model.py")
    assert workload_of(f"{model}:small") == f"{checkout / 'models' / 'model.py'}:small"
    # A relative path is read from the mapped working directory; a file outside the
    # project and a module's name are the same on both sides.
    outside = tmp_path / "elsewhere.py"
    for name in ("models/model.py", str(outside), "pkg.workloads:small", "cifar10"):
        assert workload_of(name) is None, name

"""`topos grade --against` in a project of one's own: the ref is the project's, the other
side imports the project's code at that commit with the same topos, each side's code and
the project's commit are recorded, a change of loss bits can fail the gate, and two
sides on the same code are refused.

Every project is a scratch git repository in `tmp_path` (`tests.support.scratch_project`):
a perceptron package `mymlp` written as a user writes one, a base commit on `main`, and
a pull request's commit on a branch.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.cli.grading import ROOT, one_line_error
from tests.support.scratch_project import change, grade_project, make_project


def test_a_pull_request_is_graded_against_its_base_commit_in_the_project(tmp_path: Path):
    project = tmp_path / "project"
    base = make_project(project)
    pull = change(project, "shuffle")  # the batch order: losses differ from step 0
    # As the CI template runs it: from the project's checkout, --against the base sha,
    # the workload found through a relative PYTHONPATH.
    completed, result = grade_project(project, "--against", base, "--routes", "recorded")
    # Bits that differ are said, not gated (without --fail-on-bits-change).
    assert completed.returncode in (0, 5), completed.stderr
    assert result["project"]["commit"] == pull
    assert result["project"]["dirty"] is False
    assert result["project"]["root"] == str(project.resolve())
    sides = result["against"]["sides"]
    this, other = sides["this"], sides["other"]
    # The two sides imported the project's module from two checkouts: this one, and the
    # base commit's (a temporary worktree), each recorded with its commit.
    assert this["code"]["workload_file"] == str(project.resolve() / "mymlp" / "workloads.py")
    assert other["code"]["workload_file"] != this["code"]["workload_file"]
    assert other["code"]["workload_file"].endswith("/mymlp/workloads.py")
    assert (this["workload_commit"], other["workload_commit"]) == (pull, base)
    # The same topos on both sides: the one under test, not the project's.
    assert this["code"]["topos_file"] == other["code"]["topos_file"]
    assert this["code"]["topos_file"] == str(ROOT / "topos" / "__init__.py")
    (route,) = result["against"]["comparison"]["routes"]
    assert route["bits"]["status"] == "different" and route["bits"]["first_difference"] == 0
    assert "loss bits differ from step 0" in completed.stdout


def test_a_change_of_bits_fails_the_gate_when_asked_against_a_branch(tmp_path: Path):
    project = tmp_path / "project"
    make_project(project)
    change(project, "shuffle")
    completed, result = grade_project(
        project, "--against", "main", "--routes", "recorded", "--fail-on-bits-change"
    )
    assert completed.returncode == 6, completed.stderr
    assert result["exit_status"] == 6
    comparison = result["against"]["comparison"]
    assert comparison["bits_changed"] == ["recorded"] and comparison["exit_status"] == 6
    assert "loss bits differ from the other's on recorded" in completed.stdout


def test_a_change_that_keeps_the_bits_passes_the_bits_gate(tmp_path: Path):
    project = tmp_path / "project"
    make_project(project)
    change(project, "docs")
    completed, result = grade_project(
        project, "--against", "main", "--routes", "recorded", "--fail-on-bits-change"
    )
    assert completed.returncode in (0, 5), completed.stderr
    assert result["against"]["comparison"]["bits_changed"] == []


def test_a_slower_pull_request_is_never_passed_as_no_difference(tmp_path: Path):
    # The bug: --against main resolved in topos's own repository ran the pull request's
    # model on both sides. Here the base has no pause and the pull request 30 ms a step.
    project = tmp_path / "project"
    make_project(project)
    change(project, "sleep")
    completed, result = grade_project(
        project, "--against", "main", "--routes", "recorded", "--repeat", "3", steps=6
    )
    # A judged regression (4) on a quiet machine; beside other work possibly too
    # disturbed to judge (5); never 0.
    assert completed.returncode in (4, 5), completed.stderr
    (route,) = result["against"]["comparison"]["routes"]
    time = route["time"]
    if time["outcome"] != "inconclusive":
        assert time["outcome"] == "slower" and time["lower"] > 1.1, time["reason"]
    assert route["bits"]["status"] == "identical"


def test_the_same_code_on_both_sides_is_refused_before_any_worker(tmp_path: Path):
    project = tmp_path / "project"
    base = make_project(project)
    # The work tree is the base commit: nothing would differ.
    completed, result = grade_project(project, "--against", "HEAD", "--routes", "recorded")
    assert completed.returncode == 2 and result is None
    line = one_line_error(completed)
    assert "--against HEAD" in line and base[:12] in line and "same" in line
    assert "started (worker" not in completed.stderr
    # A built-in workload is topos's code, outside the project: a commit of the project
    # changes neither side's code.
    change(project, "shuffle")
    completed, result = grade_project(
        project, "--against", "main", "--routes", "recorded", "--workload", "mnist"
    )
    assert completed.returncode == 2 and result is None
    assert "outside the project" in one_line_error(completed)


def test_a_ref_outside_a_git_repository_or_not_in_it_is_one_line(tmp_path: Path):
    project = tmp_path / "project"
    make_project(project)
    change(project, "shuffle")
    completed, _ = grade_project(project, "--against", "no-such-branch")
    line = one_line_error(completed)
    assert completed.returncode == 2
    assert "no-such-branch" in line and str(project.resolve()) in line
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "mymlp").symlink_to(project / "mymlp")
    completed, _ = grade_project(loose, "--against", "main")
    assert completed.returncode == 2
    assert "not in a git repository" in one_line_error(completed)


def test_an_installed_package_of_the_project_is_imported_from_the_base_checkout(
    tmp_path: Path,
):
    # The CI template's case: the project installed editable (`pip install -e .`), its
    # workload registered as an entry point, in a src layout the working directory does
    # not put on the path. A user site directory holds what pip writes: the dist-info with
    # the entry point, and a .pth naming the project's src/ (setuptools' editable form).
    project = tmp_path / "project"
    base = make_project(project, layout="src")
    pull = change(project, "shuffle")
    user_base = tmp_path / "user"
    site = user_base / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site = site / "site-packages"
    info = site / "mymlp-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mymlp\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[topos.workloads]\nmymlp = mymlp.workloads:workload\n")
    (site / "__editable__.mymlp-0.1.pth").write_text(str(project.resolve() / "src") + "\n")
    completed, result = grade_project(
        project,
        "--against",
        "main",
        "--routes",
        "recorded",
        "--workload",
        "mymlp",
        PYTHONUSERBASE=str(user_base),
        PYTHONPATH=str(ROOT),
        PYTHONNOUSERSITE="",
    )
    assert completed.returncode in (0, 5), completed.stderr
    sides = result["against"]["sides"]
    assert sides["this"]["code"]["workload_file"] == str(
        project.resolve() / "src" / "mymlp" / "workloads.py"
    )
    other = sides["other"]["code"]["workload_file"]
    assert other.endswith(os.path.join("src", "mymlp", "workloads.py"))
    assert not other.startswith(str(project.resolve()))
    assert (sides["this"]["workload_commit"], sides["other"]["workload_commit"]) == (pull, base)
    (route,) = result["against"]["comparison"]["routes"]
    assert route["bits"]["status"] == "different"


def test_a_workload_named_by_its_absolute_path_is_the_base_commits_file_on_its_side(
    tmp_path: Path,
):
    # Issue 48: a workload named by an absolute path inside the project was the same file
    # on both sides, and the grade was refused as "same code".
    project = tmp_path / "project"
    base = make_project(project)
    pull = change(project, "shuffle")
    module = project.resolve() / "mymlp" / "workloads.py"
    completed, result = grade_project(
        project, "--against", base, "--routes", "recorded", "--workload", str(module)
    )
    assert completed.returncode in (0, 5), completed.stderr
    sides = result["against"]["sides"]
    assert sides["this"]["code"]["workload_file"] == str(module)
    other = sides["other"]["code"]["workload_file"]
    assert other != str(module) and other.endswith("/mymlp/workloads.py")
    assert (sides["this"]["workload_commit"], sides["other"]["workload_commit"]) == (pull, base)

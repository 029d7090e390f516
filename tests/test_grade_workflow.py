"""The CI workflow that grades pull requests on every machine (`.github/workflows/grade.yml`):
it passes actionlint, the documentation shows it verbatim as the template to copy, its
matrix covers the three machine types, and it fails only where it should."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "grade.yml"
TEMPLATE = ROOT / "docs" / "guide" / "grading-in-ci.md"
ACTIONLINT = shutil.which("actionlint")


def workflow() -> dict:
    # YAML 1.1 reads the key `on` as True.
    return yaml.safe_load(WORKFLOW.read_text())


@pytest.mark.skipif(
    ACTIONLINT is None, reason="no actionlint installed (pip install -e '.[test]' ships it)"
)
def test_the_workflow_passes_actionlint():
    completed = subprocess.run(
        [ACTIONLINT, "-no-color", str(WORKFLOW)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_the_documented_template_is_the_workflow_verbatim():
    blocks = re.findall(r"^```yaml\n(.*?)^```$", TEMPLATE.read_text(), re.MULTILINE | re.DOTALL)
    assert WORKFLOW.read_text() in blocks


def test_the_matrix_grades_every_machine_type_against_the_base_commit():
    jobs = workflow()["jobs"]
    matrix = jobs["grade"]["strategy"]["matrix"]
    assert matrix["runner"] == ["ubuntu-latest", "ubuntu-24.04-arm", "macos-14"]
    assert jobs["grade"]["strategy"]["fail-fast"] is False
    grade = next(step for step in jobs["grade"]["steps"] if step.get("name") == "Grade")
    assert "topos grade" in grade["run"] and "--against" in grade["run"]
    assert grade["env"]["BASE"] == "${{ github.event.pull_request.base.sha }}"
    upload = next(
        step for step in jobs["grade"]["steps"] if "upload-artifact" in step.get("uses", "")
    )
    assert upload["if"] == "always()" and upload["with"]["path"] == "results/"
    assert "topos history artifacts/* --markdown" in str(jobs["comment"]["steps"])
    assert "grade-history" in str(jobs["history"]["steps"])


@pytest.mark.parametrize(
    ("status", "fails"), [(0, False), (5, False), (4, True), (6, True), (1, True)]
)
def test_the_check_fails_on_a_judged_regression_never_on_an_inconclusive_one(status, fails):
    steps = workflow()["jobs"]["grade"]["steps"]
    script = next(step for step in steps if step.get("name") == "Judge")["run"]
    script = script.replace("${{ matrix.runner }}", "macos-14")
    completed = subprocess.run(
        ["bash", "-e", "-c", script],
        env={**os.environ, "STATUS": str(status)},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (completed.returncode != 0) == fails, completed.stdout
    if status == 5:
        assert completed.stdout.startswith("::warning::inconclusive")


def _step(job: str, name: str) -> dict:
    return next(step for step in workflow()["jobs"][job]["steps"] if step.get("name") == name)


def _run_step(script: str, cwd: Path, environment: dict[str, str]) -> subprocess.CompletedProcess:
    """Runs a step's script as a Linux runner does (`bash -e`), in `cwd`."""
    return subprocess.run(
        ["bash", "-e", "-c", script.replace("${{ matrix.runner }}", "ubuntu-latest")],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_the_template_grades_a_project_of_ones_own_as_written(tmp_path: Path):
    from tests.cli.grading import environment
    from tests.support.scratch_project import change, make_project, run_git

    project = tmp_path / "project"
    base = make_project(project)
    pull = change(project, "shuffle")
    # `topos` on the PATH is the topos under test; the project is on the path as an
    # editable install would put it (`pip install -e .`).
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    shim = bin_folder / "topos"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m topos_cli.console_script "$@"\n')
    shim.chmod(0o755)
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    variables = environment(
        PATH=f"{bin_folder}{os.pathsep}{os.environ['PATH']}",
        PYTHONPATH=os.pathsep.join([str(project), str(ROOT)]),
        GITHUB_STEP_SUMMARY=str(summary),
        GITHUB_OUTPUT=str(output),
        WORKLOAD="mymlp.workloads:workload",
        BASE=base,
        # The workflow's own variables, made cheap: a time verdict is not what is tested
        # here, and the grade's report is drawn by the tests of the report.
        **{**workflow()["env"], "STEPS": "4", "REPEAT": "1"},
        TOPOS_REPORT="off",
        # As on a runner without Valgrind (macOS): one line says so, time is judged.
        TOPOS_VALGRIND=str(tmp_path / "no-valgrind"),
    )
    grade = _run_step(_step("grade", "Grade")["run"], project, variables)
    assert grade.returncode == 0, grade.stderr
    status = int(output.read_text().strip().removeprefix("status="))
    # The pull request changes the batch order: said, not gated; time on one repeat a
    # side is inconclusive (5), a warning.
    assert status == 5, grade.stderr
    written = summary.read_text()
    assert "instructions not counted: Valgrind is not installed" in written
    assert "loss bits differ from step 0" in written
    assert f"mymlp.workloads at {pull[:12]} (this checkout) against {base[:12]}" in written
    (result_file,) = (project / "results").glob("*.json")
    result = json.loads(result_file.read_text())
    assert result["project"]["commit"] == pull
    judge = _run_step(_step("grade", "Judge")["run"], project, {**variables, "STATUS": str(status)})
    assert judge.returncode == 0, judge.stdout
    # The comment job: the artifacts downloaded beside the checkout, then gathered.
    artifact = project / "artifacts" / "grade-ubuntu-latest-mymlp"
    artifact.mkdir(parents=True)
    for produced in (project / "results").iterdir():
        (artifact / produced.name).write_bytes(produced.read_bytes())
    gather = _run_step(_step("comment", "Gather the verdicts")["run"], project, variables)
    assert gather.returncode == 0, gather.stderr
    comment = (project / "comment.md").read_text()
    assert f"every machine against {base}" in comment
    # Labelled by the project's commit, never topos's own.
    assert pull[:12] in comment
    topos_commit = run_git("rev-parse", "HEAD", cwd=ROOT)
    assert topos_commit[:12] not in comment
    assert (project / "site" / "index.html").exists()

"""The CI workflow that grades pull requests on every machine (`.github/workflows/grade.yml`):
it passes actionlint, the documentation shows it verbatim as the template to copy, its
matrix covers the three machine types, and it fails only where it should."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
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


@pytest.mark.parametrize(("status", "fails"), [(0, False), (5, False), (4, True), (1, True)])
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

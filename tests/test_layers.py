"""The levels of each package (the import-linter contracts in pyproject.toml): kept by the
code as it is, and broken by one import from a lower level to a higher one."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

#: `lint-imports` as this interpreter runs it (its console script may be a shim).
LINT_IMPORTS = "from importlinter.cli import lint_imports_command; lint_imports_command()"


def lint_imports(project: Path) -> subprocess.CompletedProcess:
    """Runs the contracts of `project`'s pyproject.toml on the packages in `project`
    (never an installed copy: the project's folder comes first on the path), without
    writing a cache beside them."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-c", LINT_IMPORTS, "--no-cache", "--no-logo"],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def copy_of_the_project(destination: Path) -> Path:
    """The two packages, the benchmarks and pyproject.toml, copied into `destination`."""
    ignore = shutil.ignore_patterns("__pycache__", "*.svg")
    for package in ("topos", "topos_cli", "benchmarks"):
        shutil.copytree(ROOT / package, destination / package, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", destination / "pyproject.toml")
    return destination


def test_the_code_keeps_every_level():
    completed = lint_imports(ROOT)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "0 broken" in completed.stdout


@pytest.mark.parametrize(
    ("importer", "upward", "broken"),
    [
        # a primitive reaching up to the engine that lowers it
        ("topos/ops/primitives/sigmoid.py", "topos.engine", "The library's levels"),
        # the graph reaching up to the chain rule that differentiates it
        ("topos/graph/symbol.py", "topos.autodiff.chain_rule", "The library's levels"),
        # the result schema reaching up to the harness that writes it
        ("topos_cli/result/repeat.py", "topos_cli.harness", "The command side's levels"),
        # the harness reading the judge: a level below it, but measuring never judges
        (
            "topos_cli/harness/route_runner.py",
            "topos_cli.judge",
            "Measuring reads nothing of judging or drawing",
        ),
    ],
)
def test_an_upward_import_breaks_the_contract(tmp_path, importer, upward, broken):
    project = copy_of_the_project(tmp_path)
    source = project / importer
    source.write_text(source.read_text() + f"\nimport {upward}  # noqa: E402\n")

    completed = lint_imports(project)

    importer_module = importer.removesuffix(".py").replace("/", ".")
    level = ".".join(importer_module.split(".")[:2])
    upward_level = ".".join(upward.split(".")[:2])
    assert completed.returncode != 0
    assert f"{broken} BROKEN" in completed.stdout
    assert f"{level} is not allowed to import {upward_level}" in completed.stdout
    assert f"{importer_module} -> {upward}" in completed.stdout


def test_a_benchmark_importing_the_command_breaks_the_contract(tmp_path):
    # DESIGN.md: nothing in benchmarks/ imports the CLI (it runs `topos` as a user does).
    project = copy_of_the_project(tmp_path)
    source = project / "benchmarks" / "step_time.py"
    source.write_text(source.read_text() + "\nimport topos_cli.judge.statistics  # noqa: E402\n")

    completed = lint_imports(project)

    assert completed.returncode != 0
    assert "Nothing outside the command imports it BROKEN" in completed.stdout
    assert "benchmarks.step_time -> topos_cli.judge.statistics" in completed.stdout

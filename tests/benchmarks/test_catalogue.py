"""The suite's catalogue: every module of benchmarks/ named exactly once with its kind,
and every one run the suite's one way, `python -m benchmarks.NAME --help`, from the root."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from benchmarks.catalogue import CATALOGUE, KINDS, entry

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
MODULES = sorted(path.stem for path in BENCHMARKS.glob("*.py") if path.stem != "__init__")


def _catalogued_names() -> list[str]:
    """The catalogue's keys as written: a name written twice in the dict's literal would
    silently keep the second entry, so the source is read, not the dict."""
    tree = ast.parse((BENCHMARKS / "catalogue.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "CATALOGUE":
            return [key.value for key in node.value.keys]
    raise AssertionError("benchmarks/catalogue.py defines no CATALOGUE")


def test_every_module_of_the_suite_is_catalogued_exactly_once():
    names = _catalogued_names()
    duplicated = sorted({name for name in names if names.count(name) > 1})
    assert not duplicated, f"catalogued more than once: {duplicated}"
    assert sorted(set(MODULES) - set(names)) == [], "modules missing from the catalogue"
    assert sorted(set(names) - set(MODULES)) == [], "catalogued, but no such module"


def test_every_entry_has_a_known_kind_and_a_summary():
    for name, found in CATALOGUE.items():
        assert found.kind in KINDS, name
        assert found.summary.strip(), name
    # Every kind names at least one module.
    assert {found.kind for found in CATALOGUE.values()} == set(KINDS)


def test_the_suites_readme_lists_every_catalogued_module():
    readme = (BENCHMARKS / "README.md").read_text()
    assert [name for name in CATALOGUE if f"`{name}`" not in readme] == []


def _help(name: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", "--help"],
        cwd=ROOT,
        # The root alone on the path, as the suite runs; no bytecode written into it.
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def helps() -> dict[str, subprocess.CompletedProcess]:
    """Every module's `--help`, a few at a time (each is a Python start-up and imports)."""
    runnable = [name for name in MODULES if name in CATALOGUE and not _missing(name)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(runnable, pool.map(_help, runnable), strict=True))


def _missing(name: str) -> list[str]:
    return [module for module in entry(name).needs if importlib.util.find_spec(module) is None]


@pytest.mark.parametrize("name", MODULES)
def test_each_module_answers_help_run_as_a_module_of_the_package(name, helps):
    if name not in CATALOGUE:
        pytest.fail(f"benchmarks/{name}.py is not catalogued")
    missing = _missing(name)
    if missing:
        pytest.skip(f"benchmarks.{name} needs {', '.join(missing)}, which is not installed")
    finished = helps[name]
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert finished.stdout.startswith("usage:"), finished.stdout[:500]

"""`topos grade` of a JAX step written as a user writes one (tests/native/jax_regression.py):
its routes judged against `jit`, a route of the user's own among them, no memory
prediction claimed, and a missing framework refused in one line before any worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.cli.grading import ROOT, environment, graded, topos

WORKLOAD = "tests.native.jax_regression:workload"


def grade(tmp_path, workload: str, routes: str, *paths: str):
    """`topos grade` of `workload` for three steps (`paths` first on PYTHONPATH), its
    result read back."""
    return graded(
        workload,
        tmp_path,
        "--routes",
        routes,
        "--warmup",
        "0",
        steps=3,
        name="native.json",
        timeout=300,
        PYTHONPATH=os.pathsep.join([*paths, str(ROOT), str(ROOT / "examples")]),
    )


def test_a_users_route_is_judged_against_jit_through_grade(tmp_path):
    pytest.importorskip("jax")
    completed, data = grade(tmp_path, WORKLOAD, "jit,everything-saved")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    verdict = data["verdict"]
    assert verdict["reference"] == "jit"
    (agreement,) = verdict["native"]
    # Measured on this small model: the user's checkpointed loss gives jit's bits.
    assert agreement["route"] == "everything-saved" and agreement["status"] == "agrees"
    assert agreement["bit_identical"] is True and agreement["largest_gradient_error"] == 0
    runs = {run["route"]: run for run in data["repeats"]}
    assert runs["jit"]["loss_bits"] == runs["everything-saved"]["loss_bits"]
    native = runs["everything-saved"]["facts"]["ready"]["native"]
    assert native["framework"] == "jax" and native["reference"] == "jit"
    assert native["exact"] is False and native["rng_matches_reference"] is None
    # The compiled step's buffers as XLA assigned them, carried in the ready facts.
    parts = native["step_tensor_parts"]
    assert native["step_tensor_source"] == "xla buffer assignment"
    assert native["step_tensor_bytes"] == parts["temp"] + parts["output"] - parts["alias"] > 0
    assert "everything-saved's losses are bit-identical to jit's" in verdict["summary"]
    # No plan, no prediction: neither the ready line nor the memory lines claim one.
    assert "predicted" not in completed.stdout
    assert data["memory_prediction"] == []


BLOCKED = "raise ModuleNotFoundError(\"No module named '{0}'\", name='{0}')\n"


@pytest.mark.parametrize(
    ("framework", "workload", "route"),
    [("jax", WORKLOAD, "jit"), ("torch", "torch_transformer:workload", "eager")],
)
def test_a_missing_framework_is_refused_in_one_line_before_any_worker(
    tmp_path, framework, workload, route
):
    # The framework made missing for the grade: a package of its name that cannot import.
    blocked = tmp_path / "blocked" / framework
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text(BLOCKED.format(framework))
    completed, data = grade(tmp_path, workload, route, str(blocked.parent))
    assert completed.returncode == 2, completed.stdout + completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert lines == [
        f"topos: error: workload {workload!r} needs {framework}, which is not installed: "
        f"pip install 'topos[{framework}]'"
    ], completed.stderr
    assert data is None and "started (worker" not in completed.stdout + completed.stderr


PARENT = """
import json, sys
from topos_cli.harness.grade_preparation import GradeOptions, fit_to_workload, prepare
from topos_cli.harness.workload_preflight_run import preflight_workload
options = GradeOptions(workload="tests.native.jax_regression:workload",
                       routes=("jit", "checkpoint-names:hidden"), json_path="-")
prepare(options)
told = preflight_workload(options.workload, None)
fitted = fit_to_workload(options, told.framework, told.routes, told.default_routes)
print(json.dumps([told.framework, list(fitted.routes), "jax" in sys.modules]))
"""


def test_the_grading_parent_never_imports_jax():
    pytest.importorskip("jax")
    completed = subprocess.run(
        [sys.executable, "-c", PARENT],
        cwd=ROOT,
        env=environment(PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    framework, routes, imported = json.loads(completed.stdout.splitlines()[-1])
    assert framework == "jax" and routes == ["jit", "checkpoint-names:hidden"]
    assert imported is False


def test_a_jax_step_graded_against_another_checkout_is_refused_in_one_line(tmp_path):
    pytest.importorskip("jax")
    completed = topos(
        "grade",
        "--workload",
        WORKLOAD,
        "--steps",
        "2",
        "--against",
        str(ROOT),
        cwd=tmp_path,
        timeout=120,
        PYTHONPATH=str(ROOT),
    )
    assert completed.returncode == 2, completed.stdout + completed.stderr
    assert completed.stderr.strip().splitlines() == [
        f"topos: error: --workload {WORKLOAD} is a jax step: --against grades topos's own routes"
    ]

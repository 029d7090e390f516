"""Peers are judged by agreement, never bit-identity: the largest relative loss difference,
the first step beyond the tolerance, step-0 gradient errors; a divergence is exit 1."""

from __future__ import annotations

import struct

import pytest

from topos.names import missing_peer, parse_routes
from topos_cli.harness.grade_preparation import GradeOptions, prepare
from topos_cli.report.display.report import verdict_rows
from topos_cli.report.verdict import decide_verdict
from topos_cli.result.repeat import Repeat
from topos_cli.shared.errors import ToposUsageError


def _bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def _run(route: str, losses, gradient_errors=None) -> Repeat:
    facts = {}
    if gradient_errors is not None:
        facts = {"ready": {"peer": {"framework": route, "gradient_errors": gradient_errors}}}
    return Repeat(
        route,
        0,
        "ok",
        tuple(_bits(loss) for loss in losses),
        tuple(0.01 for _ in losses),
        facts=facts,
    )


def test_a_peer_that_agrees_is_not_called_bit_identical():
    runs = [
        _run("engine", [2.3, 2.2, 2.1]),
        _run("recorded", [2.3, 2.2, 2.1]),
        _run("torch", [2.3000002, 2.2, 2.1000001], {"w": 2e-7}),
    ]
    verdict = decide_verdict(runs)
    (torch,) = verdict.agreements
    assert torch.status == "agrees"
    assert torch.first_divergence_step is None
    assert 5e-8 < torch.largest_difference < 2e-7
    assert verdict.parity.status == "bit-identical"  # among topos's routes alone
    assert verdict.exit_status == 0
    cell = verdict_rows(verdict)[2][-1]
    assert cell.startswith("agrees to ") and "bit" not in cell
    assert "torch agrees with engine to" in verdict.summary


def test_a_peer_that_diverges_names_the_step_and_exits_1():
    runs = [
        _run("recorded", [2.3, 2.2, 2.1, 2.0]),
        _run("jax", [2.3, 2.2, 2.5, 2.9], {"w": 1e-7}),
    ]
    verdict = decide_verdict(runs)
    (jax,) = verdict.agreements
    assert jax.status == "diverges"
    assert jax.first_divergence_step == 2
    assert verdict.exit_status == 1
    assert "jax diverges from recorded at step 2" in verdict.summary
    assert verdict_rows(verdict)[1][-1].startswith("diverges at step 2")


def test_a_gradient_beyond_tolerance_at_step_0_diverges():
    runs = [_run("recorded", [2.3]), _run("torch", [2.3], {"w": 1e-7, "b": 0.2})]
    verdict = decide_verdict(runs)
    assert verdict.agreements[0].gradients_beyond == ("b",)
    assert verdict.exit_status == 1


def test_peer_routes_are_routes():
    assert parse_routes("engine,recorded,torch,jax") == ("engine", "recorded", "torch", "jax")


def test_a_missing_peer_is_refused_in_one_line_before_any_worker(monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "jax" else real(name, *a)
    )
    assert missing_peer("torch") is None
    message = missing_peer("jax")
    assert message is not None and "pip install 'topos[jax]'" in message
    with pytest.raises(ToposUsageError, match=r"topos\[jax\]"):
        prepare(GradeOptions(workload="mnist", routes=("recorded", "jax"), json_path="-"))


def test_torch_compile_without_a_compiler_is_refused_in_one_line_before_any_worker(monkeypatch):
    import importlib.util
    import shutil

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: object() if name == "torch" else real(name, *a),
    )
    monkeypatch.setenv("CXX", "no-such-compiler++")
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    assert missing_peer("torch") is None
    message = missing_peer("torch-compile")
    assert message is not None and "\n" not in message
    assert "'no-such-compiler++' is not on the PATH" in message and "route 'torch'" in message
    with pytest.raises(ToposUsageError, match="C\\+\\+ compiler"):
        prepare(GradeOptions(workload="mnist", routes=("recorded", "torch-compile"), json_path="-"))

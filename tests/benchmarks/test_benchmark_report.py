"""The suite's one JSON: what two benchmarks write, run cheaply as a user runs them, is
the versioned envelope around their own figures, and a file that is not one is named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from benchmarks.benchmark_report import FORMAT, VERSION, ReportError, envelope, read_report
from benchmarks.catalogue import CATALOGUE

ROOT = Path(__file__).resolve().parents[2]
MACHINE = {"cpu", "cores", "load", "python", "numpy", "blas", "architecture"}


def _run(tmp_path: Path, *command: str) -> None:
    """A benchmark run from a scratch folder, the repository's root alone on the path."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    finished = subprocess.run(
        [sys.executable, "-m", *command],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]


def _assert_envelope(report: dict, benchmark: str) -> None:
    assert report["format"] == FORMAT
    assert report["version"] == VERSION
    assert report["benchmark"] == benchmark
    assert report["kind"] == CATALOGUE[benchmark].kind
    assert datetime.fromisoformat(report["started"]).tzinfo is not None
    assert set(report["machine"]) == MACHINE
    assert report["machine"]["cores"] >= 1
    assert len(report["machine"]["load"]) == 3


def test_machine_spells_writes_its_figures_in_the_envelope(tmp_path):
    out = tmp_path / "spells.json"
    command = ["benchmarks.machine_spells", "--workload", "mnist", "--steps", "3"]
    _run(tmp_path, *command, "--out", str(out))
    report = read_report(out)
    _assert_envelope(report, "machine_spells")
    assert report["figures"]["workload"] == "mnist"
    assert report["figures"]["steps"] == 3


def test_step_time_writes_its_routes_in_the_envelope(tmp_path):
    out = tmp_path / "step_time.json"
    rounds = ["--rounds", "2", "--steps", "1", "--warmup", "1"]
    _run(tmp_path, "benchmarks.step_time", *rounds, "--no-torch", "--no-peers", "--out", str(out))
    report = read_report(out)
    _assert_envelope(report, "step_time")
    figures = report["figures"]
    assert set(figures["routes"]) == {"engine", "recorded"}
    assert figures["loss_bits_identical"] is True
    assert figures["rounds"] == 2


def test_the_envelope_takes_its_kind_from_the_catalogue():
    report = envelope("parity_check", {"steps": 5}, started="2026-01-02T03:04:05+00:00")
    assert report["kind"] == "diagnostic"
    assert report["figures"] == {"steps": 5}
    assert report["started"] == "2026-01-02T03:04:05+00:00"


@pytest.mark.parametrize(
    ("content", "culprit"),
    [
        ("{not json", "not a readable JSON file"),
        (json.dumps({"benchmark": "step_time", "routes": {}}), "not a benchmark report"),
        (json.dumps({"format": FORMAT, "version": VERSION + 1}), "this code reads version"),
    ],
)
def test_a_file_that_is_not_a_report_is_named(tmp_path, content, culprit):
    path = tmp_path / "old.json"
    path.write_text(content)
    with pytest.raises(ReportError) as raised:
        read_report(path)
    message = str(raised.value)
    assert str(path) in message and culprit in message
    assert "\n" not in message

"""A user's model graded beside a CPU hog: the time judgement takes a step for disturbed
only on the route's own evidence, never because another process kept the machine busy,
and `topos compare` of its result never says more than one repeat shows (issue 39)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cli.grading import topos
from topos_cli.judge.step_screening import DISTURBED_UTILISATION, screen_side
from topos_cli.result.result_file import load_result

GRU = "tests.support.user_models:gru_workload"


def test_a_gru_beside_a_hog_is_judged_on_its_own_evidence(tmp_path: Path):
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        result_path = tmp_path / "gru.json"
        graded = topos(
            "grade", "--workload", GRU, "--steps", "12", "--threads", "1",
            "--json", str(result_path), cwd=tmp_path, timeout=120,
        )  # fmt: skip
    finally:
        hog.kill()
        hog.wait()
    assert graded.returncode == 0, graded.stdout + graded.stderr
    result = load_result(str(result_path))
    for route in ("engine", "recorded"):
        runs = [run for run in result.repeats if run.route == route]
        side = screen_side(runs, warmup=1)
        # One BLAS thread: the route uses at most about one processor, so a step whose
        # CPU time is 0.81 of its wall or more lost nothing, whatever the machine did.
        wall = [s for run in runs for s in run.measured_step_seconds(1)]
        cpu = [c for run in runs for c in run.step_cpu_seconds[1:]]
        short = sum(c / w < DISTURBED_UTILISATION * 1.02 for w, c in zip(wall, cpu, strict=True))
        if not any(repeat.stolen for repeat in side.repeats):
            assert side.disturbed <= short, (route, side)
    for warning in result.verdict.warnings:
        if warning.kind == "disturbed":
            reason = warning.message.split("; meanwhile")[0]
            assert "saturated" not in reason and "disturbed: " in reason, warning.message
    compared = topos("compare", str(result_path), str(result_path), cwd=tmp_path)
    words = " ".join(compared.stdout.split())
    # One repeat each: inconclusive (5), no interval, and never "no regression beyond".
    assert compared.returncode == 5, words + compared.stderr
    assert "no regression beyond 10% on time" not in words
    assert "inconclusive for engine (1.00x, one repeat each" in words and "no interval" in words

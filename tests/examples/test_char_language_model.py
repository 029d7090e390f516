"""The language-model template runs as written: graded by `topos grade` (bit-identical
routes, a loss that falls), checked by `topos check`, and trained on a text of one's own."""

from __future__ import annotations

import io
import json
import os

from tests.cli.grading import ROOT, topos

WORKLOAD = "char_language_model:workload"


def test_the_template_grades_bit_identically_and_learns(tmp_path):
    result_path = tmp_path / "lm.json"
    completed = topos(
        "grade",
        "--workload",
        WORKLOAD,
        "--steps",
        "40",
        "--json",
        str(result_path),
        cwd=tmp_path,
        timeout=300,
        # The examples, then this checkout (which an installed topos must not shadow).
        PYTHONPATH=os.pathsep.join([str(ROOT / "examples"), str(ROOT)]),
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(result_path.read_text())
    assert result["verdict"]["parity"]["status"] == "bit-identical"
    losses = {run["route"]: (run["first_loss"], run["final_loss"]) for run in result["repeats"]}
    assert losses["engine"] == losses["recorded"]
    first, final = losses["engine"]
    assert final < first - 0.5  # it learns the text's characters


def test_the_template_checks_right(monkeypatch):
    from topos_cli.commands.check import CheckOptions, run_check

    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    output = io.StringIO()
    options = CheckOptions(workload=WORKLOAD, rows=2, directions=1)
    assert run_check(options, stdout=output, stderr=io.StringIO()) == 0, output.getvalue()
    assert "feed_forward.w2.weight" in output.getvalue()


def test_the_template_trains_on_a_text_of_ones_own(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    from char_language_model import workload

    from topos.training import Training

    path = tmp_path / "input.txt"
    path.write_text("a small text of my own, read character by character.\n" * 20)
    dataset = workload.dataset(str(tmp_path))
    training = Training(workload, "recorded", dataset, 2)
    assert training.parameters.named()["output.weight"].shape == (32, len(set(path.read_text())))
    assert training.step(0) > training.step(1)

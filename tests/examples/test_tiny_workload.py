"""The README's example workload, graded the way the README says to."""

import json

from tests.cli.grading import ROOT, topos


def test_the_readme_workload_grades_bit_identically(tmp_path):
    result_path = tmp_path / "tiny.json"
    completed = topos(
        "grade",
        "--workload",
        "tiny_workload:workload",
        "--steps",
        "50",
        "--json",
        str(result_path),
        cwd=tmp_path,
        timeout=120,
        PYTHONPATH=str(ROOT / "examples"),
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(result_path.read_text())
    assert result["workload"]["name"] == "tiny_workload:workload"
    assert result["workload"]["data"]["name"] == "tiny"
    assert result["verdict"]["parity"]["status"] == "bit-identical"
    losses = {run["route"]: (run["first_loss"], run["final_loss"]) for run in result["repeats"]}
    assert losses["engine"] == losses["recorded"]
    first, final = losses["engine"]
    assert final < first / 10  # the tiny task is easy: it really learns


def test_the_readme_names_the_example_workload():
    readme = (ROOT / "README.md").read_text()
    assert "PYTHONPATH=examples topos grade --workload tiny_workload:workload" in readme

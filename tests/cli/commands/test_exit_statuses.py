"""Issue 11 with real subprocesses: when several outcomes apply, the README's order decides
the exit status (130, 2, 3, 1, 4, 0)."""

from __future__ import annotations

from tests.cli.grading import grade_tiny, topos


def test_a_loss_that_turns_nan_on_one_route_only_is_parity_broken_3(tmp_path):
    completed, result = grade_tiny("diverges_alone", tmp_path)
    assert completed.returncode == 3, completed.stderr
    assert result["exit_status"] == 3
    statuses = {repeat["route"]: repeat["status"] for repeat in result["repeats"]}
    assert statuses == {"engine": "ok", "recorded": "nonfinite"}
    assert result["verdict"]["parity"]["status"] == "broken"


def test_a_result_not_written_where_asked_is_2_over_a_route_failure(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    (tmp_path / "fallback").mkdir()
    completed = topos(
        "grade",
        "--workload",
        "tests.cli.tiny_workloads:blocks_its_result_and_raises",
        "--steps",
        "6",
        "--json",
        str(folder / "result.json"),
        cwd=tmp_path,
        TINY_BLOCKED_FOLDER=str(folder),
        TMPDIR=str(tmp_path / "fallback"),
    )
    # The recorded route failed (1), and the result could not be written where asked (2).
    assert completed.returncode == 2, completed.stderr
    assert "saved to" in completed.stderr

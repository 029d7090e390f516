"""`topos frontier` on a model of one's own: a GRU written as a user writes one
(`tests.support.user_models`), graded at three budgets over a few steps. Its remat points
are monotone (a smaller budget never plans more bytes nor recomputes fewer FLOPs), each
point's measured training Δ is reported beside its prediction, in the JSON, the table
and the picture, and remat at 100% holds recorded's Δ."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ElementTree

from tests.cli.grading import succeeded

GRU = "tests.support.user_models:gru_workload"


def test_a_frontier_of_a_gru_is_monotone_and_reports_every_measured_delta(tmp_path):
    completed, result = succeeded(
        "frontier",
        "--workload",
        GRU,
        "--budgets",
        "100%,70%,floor",
        "--steps",
        "3",
        cwd=tmp_path,
        timeout=180.0,
        name="frontier.json",
    )
    assert result["verdict"]["parity"]["status"] == "bit-identical"
    points = result["frontier"]["points"]
    remat = [point for point in points if point.startswith("remat@")]
    assert len(remat) >= 2, points  # the GRU's floor recomputes: not recorded's plan
    facts = sorted(
        (result["routes"][point]["remat"] for point in remat),
        key=lambda each: each["budget_bytes"],
        reverse=True,
    )
    for larger, smaller in itertools.pairwise(facts):
        assert smaller["planned_bytes"] <= larger["planned_bytes"]
        assert smaller["extra_flops"] >= larger["extra_flops"]
        assert smaller["planned_bytes"] <= smaller["budget_bytes"]

    # Every point's measured Δ, in the verdict and beside its prediction.
    measured = {
        route["route"]: route["memory"]["training_delta_bytes"]
        for route in result["verdict"]["routes"]
    }
    assert set(measured) == set(points)
    assert all(isinstance(delta, int) and delta > 0 for delta in measured.values()), measured
    predictions = {entry["route"]: entry for entry in result["memory_prediction"]}
    for point in points:
        entry = predictions[point]
        assert entry["measured_training_delta_bytes"] == measured[point]
        assert entry["predicted_training_bytes"] > 0
    # Remat at 100% recomputes nothing and holds what recorded holds (a floor sought
    # after ready once added 14.7 MiB to its Δ): within the prediction's own tolerance.
    assert result["routes"]["remat@100%"]["remat"]["recomputations"] == 0
    assert predictions["remat@100%"]["within_tolerance"], predictions["remat@100%"]

    # The table has a measured figure in every point's row.
    lines = completed.stdout.split("\n\n", 1)[0].splitlines()
    headers = [cell.strip() for cell in lines[0].split("  ") if cell.strip()]
    column = headers.index("training Δ MiB")
    for point in points:
        (row,) = [line for line in lines if line.split(" ", 1)[0] == point]
        cells = [cell.strip() for cell in row.split("  ") if cell.strip()]
        float(cells[column])  # a figure, not "?"
    # The picture: a measured mark and a predicted cross per point, a key line per point.
    picture = ElementTree.parse(tmp_path / "frontier.svg").getroot()
    namespace = "{http://www.w3.org/2000/svg}"
    marks = [circle for circle in picture.iter(f"{namespace}circle") if circle.get("r") == "5"]
    crosses = [
        path for path in picture.iter(f"{namespace}path") if path.get("class") == "predicted"
    ]
    assert len(marks) == len(crosses) == len(points)
    texts = [element.text or "" for element in picture.iter(f"{namespace}text")]
    for point in remat:
        assert any(
            text.startswith(f"{point}: budget ") and " recomputed " in text for text in texts
        )

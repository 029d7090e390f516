"""The CSV export holds numbers where a spreadsheet expects them: the time against the
reference is a ratio (with its interval's ends, where there is one) beside a judgement
column in words, and the CPU ms/step has a column of its own (issue 39)."""

from __future__ import annotations

import csv
import io

import pytest

from tests.cli.quiet_runs import WIDE_NEW, WIDE_OLD, runs
from topos_cli.judge.verdict import decide_verdict
from topos_cli.render.exporters import EXPORTERS, ExportedGrade
from topos_cli.render.exporters.export_rows import COLUMNS, export_rows


def csv_text(verdict):
    return EXPORTERS["--export-csv"].export(ExportedGrade("tiny", verdict))


def markdown_text(verdict):
    return EXPORTERS["--export-markdown"].export(ExportedGrade("tiny", verdict))


def test_the_time_against_the_reference_is_a_number_beside_its_judgement():
    verdict = decide_verdict(runs("engine", WIDE_OLD, seed=1) + runs("recorded", WIDE_NEW))
    rows = list(csv.DictReader(io.StringIO(csv_text(verdict))))
    assert tuple(rows[0]) == COLUMNS
    engine, recorded = rows
    assert (engine["time_vs_reference"], engine["judgement_vs_reference"]) == ("1.0", "reference")
    judgement = verdict.route("recorded").speed.ratio.judgement
    assert float(recorded["time_vs_reference"]) == pytest.approx(judgement.ratio)
    assert float(recorded["time_vs_reference_lower"]) == pytest.approx(judgement.lower)
    assert float(recorded["time_vs_reference_upper"]) == pytest.approx(judgement.upper)
    assert recorded["judgement_vs_reference"] == "no clear difference"
    # The CPU time of a step: 0.99 of its wall in these runs.
    wall = float(recorded["wall_ms_per_step_median"])
    assert float(recorded["cpu_ms_per_step"]) == pytest.approx(0.99 * wall, rel=0.03)
    # The Markdown table, for people, keeps the verdict's phrase and says the CPU time.
    table = markdown_text(verdict).splitlines()
    assert "CPU ms/step" in table[0]
    assert verdict.route("recorded").speed.ratio.phrase in table[3]


def test_one_repeat_a_side_exports_a_ratio_without_an_interval():
    verdict = decide_verdict(runs("engine", [0.010], seed=1) + runs("recorded", [0.0135]))
    row = export_rows(verdict)[1]
    assert row["time_vs_reference"] == pytest.approx(1.35, rel=0.02)
    assert row["time_vs_reference_lower"] is None and row["time_vs_reference_upper"] is None
    assert row["judgement_vs_reference"] == "inconclusive"

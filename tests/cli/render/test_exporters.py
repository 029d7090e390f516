"""Every export is behind one interface: the registry offers the options the grade
checks before a worker starts, each exporter writes through the one writer (JSON to
standard output escaped for an ASCII stream, as the result is), and every Markdown table
comes from the one writer (issue 44)."""

from __future__ import annotations

import io
import json

import pytest

from tests.cli.quiet_runs import WIDE_NEW, WIDE_OLD, runs
from topos_cli.harness.grade_preparation import GradeOptions
from topos_cli.judge.verdict import decide_verdict
from topos_cli.render.exporters import EXPORTERS, ExportedGrade, write_export
from topos_cli.render.exporters.markdown_table import markdown_table
from topos_cli.result.result_file import ResultFileError, dumps


def _grade() -> ExportedGrade:
    verdict = decide_verdict(runs("engine", WIDE_OLD, seed=1) + runs("recorded", WIDE_NEW))
    return ExportedGrade("tiny", verdict)


def test_the_registry_offers_the_options_the_grade_checks():
    assert tuple(EXPORTERS) == tuple(GradeOptions().exports)
    for option, exporter in EXPORTERS.items():
        assert exporter.option == option and exporter.suffix.startswith(".")
    # Only a JSON export may go to standard output, as the path guard allows.
    assert [option for option, e in EXPORTERS.items() if e.standard_output] == [
        "--github-benchmark"
    ]


@pytest.mark.parametrize("option", list(EXPORTERS))
def test_each_exporter_writes_its_text_through_the_one_writer(tmp_path, option):
    exporter, grade = EXPORTERS[option], _grade()
    path = tmp_path / "deeper" / f"export{exporter.suffix}"
    assert write_export(exporter, path, grade)
    assert path.read_text(encoding="utf-8") == exporter.export(grade)


def test_without_a_verdict_only_the_benchmark_list_is_written(tmp_path):
    empty = ExportedGrade("tiny", None)
    written = {
        option: write_export(exporter, tmp_path / f"empty{exporter.suffix}", empty)
        for option, exporter in EXPORTERS.items()
    }
    assert written == {
        "--github-benchmark": True,
        "--export-csv": False,
        "--export-markdown": False,
    }
    assert json.loads((tmp_path / "empty.json").read_text()) == []


def test_a_file_in_the_way_is_one_line_naming_it(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ResultFileError, match=r"cannot write .*: .*file is not a directory"):
        write_export(EXPORTERS["--export-csv"], tmp_path / "file" / "x.csv", _grade())


class _AsciiStream(io.StringIO):
    encoding = "ascii"


def test_json_to_an_ascii_standard_output_is_the_same_json_escaped(monkeypatch):
    grade = _grade()
    stream = _AsciiStream()
    monkeypatch.setattr("sys.stdout", stream)
    write_export(EXPORTERS["--github-benchmark"], "-", grade)
    text = stream.getvalue()
    assert text.isascii() and "\\u00b1" in text
    data = json.loads(EXPORTERS["--github-benchmark"].export(grade))
    assert text == dumps(data, ensure_ascii=True)


def test_the_markdown_writer_escapes_cells_and_aligns_figures_right():
    table = markdown_table(["name", "ms"], [["a | b\nc", "1.5"]], right_aligned={1})
    assert table.splitlines() == ["| name | ms |", "| --- | ---: |", "| a \\| b c | 1.5 |"]

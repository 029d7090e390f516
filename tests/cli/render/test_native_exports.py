"""A native route's memory is its step tensors, and every export says so beside the
training Δ, named as the verdict table names them: the CSV's column, the Markdown
export's, github-action-benchmark's entry, and the history (its table, through the one
comparison); topos's own routes' exports are as they were (issue 48's leftover, issue 44)."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone

from tests.support.native_runs import native_run
from topos_cli.judge.compare import compare_results
from topos_cli.judge.history import read_history
from topos_cli.judge.verdict import decide_verdict
from topos_cli.render.exporters import EXPORTERS, ExportedGrade
from topos_cli.render.exporters.export_rows import COLUMNS
from topos_cli.render.history_table import render_history_markdown
from topos_cli.result.result_file import compose_result, write_atomically
from topos_cli.shared.units import MEBIBYTE


def _native(eager: int = 24, checkpoint: int = 18, native: bool = True) -> list:
    names = ("eager", "checkpoint") if native else ("engine", "recorded")
    tensors = (eager * MEBIBYTE, checkpoint * MEBIBYTE) if native else (None, None)
    return [
        native_run(names[0], 6.0, tensors[0], native),
        native_run(names[1], 9.7, tensors[1], native),
    ]


def _export(option: str, runs: list) -> str:
    return EXPORTERS[option].export(ExportedGrade("cnn", decide_verdict(runs)))


def test_the_csv_has_the_step_tensors_in_bytes_beside_the_training_delta():
    rows = list(csv.DictReader(io.StringIO(_export("--export-csv", _native()))))
    header = list(rows[0])
    assert header.index("step_tensor_bytes") == header.index("training_delta_bytes") + 1
    assert [int(row["step_tensor_bytes"]) for row in rows] == [24 * MEBIBYTE, 18 * MEBIBYTE]
    # topos's own routes measure none: their columns are as they were.
    plain = list(csv.DictReader(io.StringIO(_export("--export-csv", _native(native=False)))))
    assert tuple(plain[0]) == COLUMNS


def test_the_markdown_export_names_them_as_the_verdict_table_does():
    lines = _export("--export-markdown", _native()).splitlines()
    headers = [cell.strip() for cell in lines[0].strip("|").split("|")]
    where = headers.index("step tensors (MiB)")
    assert headers[where - 1] == "training Δ (MiB)"
    cells = [cell.strip() for cell in lines[3].strip("|").split("|")]
    assert cells[where] == "18.0" and cells[where - 1] == "9.7"
    assert "step tensors" not in _export("--export-markdown", _native(native=False))


def test_the_benchmark_list_has_an_entry_of_step_tensors_per_native_route():
    entries = json.loads(_export("--github-benchmark", _native()))
    tensors = {entry["name"]: entry for entry in entries if entry["name"].endswith("tensors")}
    assert list(tensors) == ["cnn eager: step tensors", "cnn checkpoint: step tensors"]
    assert tensors["cnn checkpoint: step tensors"]["value"] == 18 * MEBIBYTE
    assert tensors["cnn checkpoint: step tensors"]["unit"] == "bytes"
    plain = json.loads(_export("--github-benchmark", _native(native=False)))
    assert not any("tensors" in entry["name"] for entry in plain)


def _result(runs: list, hour: int):
    return compose_result(
        workload={"name": "cnn", "data": {"source": "synthetic"}},
        host={"cpu_model": "test CPU"},
        steps=3,
        repeats=runs,
        verdict=decide_verdict(runs),
        settings={"threads": 1},
        created=datetime(2026, 8, 14, hour, tzinfo=timezone.utc),
    )


def test_compare_and_the_history_judge_and_show_the_step_tensors(tmp_path):
    older, newer = _result(_native(24, 18), 10), _result(_native(24, 27), 11)
    changes = {(c.route, c.figure): c for c in compare_results(older, newer).changes}
    grown = changes[("checkpoint", "step tensors")]
    assert grown.old == 18 * MEBIBYTE and grown.new == 27 * MEBIBYTE
    assert grown.status == "regression"
    for name, result in (("a.json", older), ("b.json", newer)):
        write_atomically(tmp_path / name, result)
    text = render_history_markdown(read_history([tmp_path]))
    header = next(line for line in text.splitlines() if line.startswith("| created"))
    assert header.endswith("| Δ MiB | step MiB |")
    row = [line for line in text.splitlines() if "| checkpoint |" in line][-1]
    assert row.endswith("| 27.0 (+50.0%) ▲ |")
    # topos's own routes: no such figure, no such column.
    plain = _result(_native(native=False), 10)
    assert not any(c.figure == "step tensors" for c in compare_results(plain, plain).changes)

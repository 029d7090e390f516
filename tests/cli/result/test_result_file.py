"""Tests of the result file: atomic writes that never leave half a file, one-line load errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from topos_cli.harness.result_destination import check_destination
from topos_cli.judge.verdict import decide_verdict
from topos_cli.render.exporters import EXPORTERS, ExportedGrade, write_export
from topos_cli.render.exporters.github_benchmark_exporter import github_benchmark_entries
from topos_cli.result import result_file
from topos_cli.result.float_bits import float32_bits
from topos_cli.result.grade_result import SCHEMA
from topos_cli.result.repeat import Repeat
from topos_cli.result.result_file import (
    compose_result,
    default_result_path,
    load_result,
    read_result,
    write_atomically,
)
from topos_cli.shared.errors import ResultFileError, ToposUsageError

MEBIBYTE = 1024 * 1024


def make_result(workload: str = "cifar10") -> dict:
    """A small but complete result of two routes, one repeat each."""
    bits = tuple(float32_bits(2.3 - 0.01 * step) for step in range(5))
    runs = [
        Repeat(
            route,
            0,
            "ok",
            bits,
            tuple(seconds for _ in bits),
            peak_rss_bytes=peak,
            ready_rss_bytes=100 * MEBIBYTE,
        )
        for route, seconds, peak in (
            ("engine", 0.2, 500 * MEBIBYTE),
            ("recorded", 0.18, 400 * MEBIBYTE),
        )
    ]
    return compose_result(
        workload={"name": workload, "data": {"source": "synthetic"}},
        host={"cpu_model": "test CPU"},
        steps=5,
        repeats=runs,
        verdict=decide_verdict(runs),
        settings={"threads": 1},
        created=datetime(2026, 8, 14, 10, 15, tzinfo=timezone.utc),
    )


def test_a_written_result_loads_back_and_its_runs_parse(tmp_path):
    path = tmp_path / "result.json"
    write_atomically(path, make_result())
    loaded = load_result(path)
    assert loaded.schema == SCHEMA
    assert loaded.created == "2026-08-14T10:15:00Z"
    assert [run.route for run in loaded.repeats] == ["engine", "recorded"]
    assert loaded.verdict.exit_status == 0
    assert loaded == make_result()
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_non_finite_numbers_are_written_as_strict_json(tmp_path):
    path = tmp_path / "odd.json"
    write_atomically(path, {"values": [float("nan"), float("inf"), -float("inf"), (1.5,)]})
    text = path.read_text(encoding="utf-8")
    assert json.loads(text, parse_constant=pytest.fail) == {"values": ["nan", "inf", "-inf", [1.5]]}


def test_a_failure_mid_write_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "result.json"
    write_atomically(path, {"generation": "old"})

    def interrupted(descriptor):
        raise KeyboardInterrupt  # as if Ctrl-C landed after the bytes, before the rename

    monkeypatch.setattr(result_file.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomically(path, {"generation": "new"})
    assert json.loads(path.read_text(encoding="utf-8")) == {"generation": "old"}
    assert list(tmp_path.iterdir()) == [path]


def test_a_failed_rename_is_one_line_naming_the_file_and_keeps_the_old(tmp_path, monkeypatch):
    path = tmp_path / "result.json"
    write_atomically(path, {"generation": "old"})

    def no_space(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(result_file.os, "replace", no_space)
    with pytest.raises(ResultFileError) as raised:
        write_atomically(path, {"generation": "new"})
    assert str(raised.value) == f"cannot write {path}: No space left on device"
    assert raised.value.exit_status == 2
    assert json.loads(path.read_text(encoding="utf-8")) == {"generation": "old"}
    assert list(tmp_path.iterdir()) == [path]


def test_data_that_cannot_be_serialised_never_touches_the_file(tmp_path):
    path = tmp_path / "result.json"
    write_atomically(path, {"generation": "old"})
    with pytest.raises(TypeError):
        write_atomically(path, {"generation": object()})
    assert json.loads(path.read_text(encoding="utf-8")) == {"generation": "old"}


def test_a_kill_at_any_moment_leaves_a_whole_file(tmp_path):
    """A real process rewrites a large result in a loop; SIGKILL lands wherever it lands.

    Against a writer that truncates and rewrites in place, most runs of this
    test see a torn file; the deterministic tests above pin the mechanism.
    """
    path = tmp_path / "result.json"
    write_atomically(path, {"generation": -1, "padding": "x" * 1_000_000})
    writer = textwrap.dedent(
        f"""
        import sys
        from topos_cli.result.result_file import write_atomically
        print("ready", flush=True)
        generation = 0
        padding = "x" * 1_000_000
        while True:
            write_atomically({str(path)!r}, {{"generation": generation, "padding": padding}})
            generation += 1
        """
    )
    for delay in (0.03, 0.05, 0.07, 0.11, 0.13, 0.17):
        process = subprocess.Popen(
            [sys.executable, "-c", writer],
            stdout=subprocess.PIPE,
            cwd=Path(__file__).resolve().parents[3],
        )
        assert process.stdout.readline() == b"ready\n"
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        document = json.loads(path.read_text(encoding="utf-8"))
        assert len(document["padding"]) == 1_000_000
        assert isinstance(document["generation"], int)


def test_the_file_mode_follows_the_umask(tmp_path):
    previous = os.umask(0o022)
    try:
        write_atomically(tmp_path / "result.json", {})
    finally:
        os.umask(previous)
    assert (tmp_path / "result.json").stat().st_mode & 0o777 == 0o644


def test_a_dash_writes_to_standard_output(capsys):
    write_atomically("-", {"schema": SCHEMA})
    assert json.loads(capsys.readouterr().out) == {"schema": SCHEMA}


def test_missing_directories_are_created(tmp_path):
    path = tmp_path / "results" / "nested" / "result.json"
    write_atomically(path, {})
    assert path.exists()


def test_an_unwritable_path_fails_early_in_one_line_and_creates_nothing(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    for path in (blocker / "result.json", tmp_path):
        with pytest.raises(ToposUsageError) as raised:
            check_destination(str(path))
        assert str(raised.value).startswith(f"--json {path}: cannot write it: ")
        assert "\n" not in str(raised.value)
    with pytest.raises(ResultFileError) as raised:
        write_atomically(blocker / "result.json", {})
    assert str(raised.value).endswith(f"{blocker} is not a directory")
    check_destination(str(tmp_path / "new" / "result.json"))
    check_destination("-")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a-file"]


def test_the_default_path_names_the_workload_and_the_utc_time():
    moment = datetime(2026, 8, 14, 10, 15, 0, tzinfo=timezone.utc)
    assert default_result_path("cifar10", moment) == Path(
        "results/grade-cifar10-20260814T101500Z.json"
    )
    assert default_result_path("my.package:model / v2", moment).name == (
        "grade-my.package-model-v2-20260814T101500Z.json"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not a topos result (not JSON: "),
        ("[1, 2]", "is not a topos result (it holds an array, not an object)"),
        ('{"name": "x"}', "is not a topos result (no schema)"),
        ('{"schema": "pytest-benchmark"}', "is not a topos result (schema 'pytest-benchmark')"),
        ('{"schema": "topos.grade/2"}', f"has schema topos.grade/2; this topos reads {SCHEMA}"),
        (
            f'{{"schema": "{SCHEMA}", "steps": 1}}',
            "malformed topos result: Object missing required field `workload`",
        ),
    ],
)
def test_load_errors_are_one_line_naming_the_file(tmp_path, content, message):
    path = tmp_path / "old.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ResultFileError) as raised:
        load_result(path)
    text = str(raised.value)
    assert text.startswith(str(path))
    assert message in text
    assert "\n" not in text
    assert raised.value.exit_status == 2


def test_a_missing_or_binary_file_is_named(tmp_path):
    with pytest.raises(ResultFileError, match="no such file"):
        load_result(tmp_path / "absent.json")
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ResultFileError, match="not UTF-8"):
        load_result(binary)


def test_a_malformed_run_is_named_by_its_index():
    result = make_result().to_json()
    result["repeats"][1]["status"] = "exploded"
    with pytest.raises(ResultFileError, match=r"'exploded' - at `\$\.repeats\[1\]\.status`"):
        read_result(result, "new.json")


def test_compose_result_requires_a_workload_name():
    with pytest.raises(ValueError, match="name"):
        compose_result(
            workload={},
            host={},
            steps=0,
            repeats=[],
            verdict=decide_verdict([Repeat("engine", 0, "ok")]),
        )


def test_github_benchmark_entries_give_time_and_bytes_per_route(tmp_path):
    result = make_result()
    verdict = decide_verdict(result.repeats)
    entries = github_benchmark_entries(result.workload.name, verdict)
    names = [entry["name"] for entry in entries]
    assert names == [
        "cifar10 engine: time per step",
        "cifar10 engine: peak RSS",
        "cifar10 engine: training delta",
        "cifar10 recorded: time per step",
        "cifar10 recorded: peak RSS",
        "cifar10 recorded: training delta",
    ]
    time_entry, peak_entry = entries[3], entries[4]
    assert time_entry["unit"] == "ms/step"
    assert time_entry["value"] == pytest.approx(180.0)
    assert time_entry["range"] == "± 0.000"
    assert peak_entry == {
        "name": "cifar10 recorded: peak RSS",
        "unit": "bytes",
        "value": 400 * MEBIBYTE,
        "range": "± 0",
        "extra": f"median over repeats; from {400 * MEBIBYTE} to {400 * MEBIBYTE} bytes; "
        "1 of 1 repeats completed",
    }
    assert all(set(entry) == {"name", "unit", "value", "range", "extra"} for entry in entries)
    path = tmp_path / "benchmark.json"
    write_export(
        EXPORTERS["--github-benchmark"], path, ExportedGrade(result.workload.name, verdict)
    )
    assert json.loads(path.read_text(encoding="utf-8")) == entries

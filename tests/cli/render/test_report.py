"""Tests of rendering: plain text off a terminal, Markdown for CI, rich on a terminal."""

from __future__ import annotations

import io
from pathlib import Path

import msgspec
import pytest

from tests.support.parent_process import heavy_modules_loaded
from topos_cli.judge.compare import compare_results
from topos_cli.judge.verdict import decide_verdict
from topos_cli.render.comparison_table import (
    print_comparison,
    render_comparison_markdown,
    render_comparison_plain,
)
from topos_cli.render.exporters.export_rows import export_rows
from topos_cli.render.exporters.markdown_table import markdown_table
from topos_cli.render.tables import plain_table
from topos_cli.render.verdict_table import (
    VERDICT_HEADERS,
    print_verdict,
    render_verdict_markdown,
    render_verdict_plain,
    verdict_rows,
)
from topos_cli.result.float_bits import float32_bits
from topos_cli.result.repeat import Repeat
from topos_cli.result.result_file import compose_result
from topos_cli.shared.output_stream import use_plain_output

MEBIBYTE = 1024 * 1024
ESCAPE = "\x1b["
BOX_CHARACTERS = set("│┃━─┏┓└┘╇┡")


def make_runs(*, broken_at: int | None = None, failed: bool = False) -> list[Repeat]:
    """Engine at 112 ms/step and 1000 MiB, recorded at 100 ms/step and 780 MiB."""
    bits = [float32_bits(2.3 - 0.01 * step) for step in range(20)]
    recorded_bits = list(bits)
    if broken_at is not None:
        recorded_bits[broken_at] += 2
    engine = Repeat(
        "engine",
        0,
        "ok",
        tuple(bits),
        tuple(0.112 for _ in bits),
        peak_rss_bytes=1000 * MEBIBYTE,
        ready_rss_bytes=200 * MEBIBYTE,
    )
    recorded = Repeat(
        "recorded",
        0,
        "failed" if failed else "ok",
        tuple(recorded_bits[:5] if failed else recorded_bits),
        tuple(0.100 for _ in (recorded_bits[:5] if failed else recorded_bits)),
        peak_rss_bytes=780 * MEBIBYTE,
        ready_rss_bytes=200 * MEBIBYTE,
        detail="exit status 1\nTraceback (most recent call last):\nValueError: boom"
        if failed
        else None,
    )
    return [engine, recorded]


class FakeTerminal(io.StringIO):
    """A text stream that claims to be a terminal."""

    def isatty(self) -> bool:
        return True


def test_plain_output_off_a_terminal_or_with_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_plain_output(io.StringIO())
    assert not use_plain_output(FakeTerminal())
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_plain_output(FakeTerminal())
    monkeypatch.setenv("NO_COLOR", "")  # an empty NO_COLOR does not count (no-color.org)
    assert not use_plain_output(FakeTerminal())


def test_the_plain_verdict_has_every_figure_and_no_escapes_or_boxes(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    stream = io.StringIO()
    verdict = decide_verdict(three_repeats(make_runs()))
    print_verdict(verdict, file=stream)
    text = stream.getvalue()
    assert ESCAPE not in text
    assert not BOX_CHARACTERS & set(text)
    header, rule, engine, recorded, _, summary = text.splitlines()
    assert header.split("  ")[0] == "route"
    assert set(rule) == {"-", " "}
    assert engine.split() == [
        "engine",
        "ok",
        "112.0",
        "±",
        "0.0",
        "[112.0–112.0]",
        "—",
        "112.0",
        "reference",
        "1000.0",
        "800.0",
        "reference",
        "bit-identical",
    ]
    assert "1.12 ± 0.00x faster" in recorded
    assert "0.78x (Δ 0.72x)" in recorded
    assert summary == verdict.summary
    assert summary.startswith("recorded: 1.12 ± 0.00x faster, 0.78x the memory of engine")


def test_a_parity_break_shows_in_the_route_row_and_the_summary():
    verdict = decide_verdict(make_runs(broken_at=7))
    text = render_verdict_plain(verdict)
    recorded_row = next(line for line in text.splitlines() if line.startswith("recorded"))
    assert recorded_row.rstrip().endswith("parts at step 7")
    assert "2 ulps apart" in text


def test_a_route_with_the_references_bits_is_bit_identical_when_another_parts():
    # Issue 48: a checkpointed step with eager's bits at every step read "agrees" (the
    # word for a compiled route within a tolerance) once another route had parted.
    engine, recorded = make_runs(broken_at=7)
    remat = Repeat(
        "remat",
        0,
        "ok",
        engine.loss_bits,
        engine.step_seconds,
        peak_rss_bytes=600 * MEBIBYTE,
        ready_rss_bytes=200 * MEBIBYTE,
    )
    short = Repeat("remat", 1, "ok", engine.loss_bits[:5], engine.step_seconds[:5])
    rows = {row[0]: row[-1] for row in verdict_rows(decide_verdict([engine, recorded, remat]))}
    assert rows == {
        "engine": "bit-identical",
        "recorded": "parts at step 7",
        "remat": "bit-identical",
    }
    # The exports word it as the table does: one verdict, worded once.
    exported = {
        row["route"]: row["parity"]
        for row in export_rows(decide_verdict([engine, recorded, remat]))
    }
    assert exported == rows
    # A run that stopped short was compared only so far: it agrees, as far as it went.
    rows = {
        row[0]: row[-1] for row in verdict_rows(decide_verdict([engine, recorded, remat, short]))
    }
    assert rows["remat"] == "agrees" and rows["engine"] == "bit-identical"


def test_a_failure_shows_its_detail_lines():
    text = render_verdict_plain(decide_verdict(make_runs(failed=True)))
    assert "recorded repeat 1: failed: exit status 1" in text
    assert "    ValueError: boom" in text


def test_warnings_come_with_their_remedy():
    text = render_verdict_plain(decide_verdict(make_runs(), load_average=8.0, cores=2))
    assert "warning: the machine was busy: load average 8.00 on 2 cores" in text
    assert "    remedy: stop other work on the machine" in text


def test_the_markdown_verdict_is_a_table_then_the_summary():
    verdict = decide_verdict(make_runs(failed=True), load_average=8.0, cores=2)
    text = render_verdict_markdown(verdict)
    lines = text.splitlines()
    assert lines[0] == "| " + " | ".join(VERDICT_HEADERS) + " |"
    assert lines[1] == "| " + " | ".join(["---"] * len(VERDICT_HEADERS)) + " |"
    assert lines[2].startswith("| engine | ok |")
    assert lines[3].startswith("| recorded | failed |")
    assert lines[5] == f"**{verdict.summary}**"
    assert "- warning: the machine was busy: load average 8.00 on 2 cores" in lines
    assert "  - remedy: stop other work on the machine, or grade on an idle one" in lines
    stream = FakeTerminal()
    print_verdict(verdict, file=stream, markdown=True)
    assert stream.getvalue() == text


def test_markdown_cells_escape_pipes():
    assert markdown_table(["a"], [["x | y"]]).splitlines()[2] == "| x \\| y |"


def test_plain_table_aligns_columns():
    assert plain_table(["a", "bb"], [["ccc", "d"]]).splitlines() == [
        "a    bb",
        "---  --",
        "ccc  d",
    ]


def test_the_rich_verdict_on_a_terminal_is_a_table(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    stream = FakeTerminal()
    verdict = decide_verdict(make_runs())
    print_verdict(verdict, file=stream)
    text = stream.getvalue()
    assert "topos grade" in text
    assert ESCAPE in text  # styled
    for cell in verdict_rows(verdict)[1]:
        for word in cell.split():
            assert word in text


def three_repeats(repeats: list[Repeat]) -> list[Repeat]:
    """The runs, and two more repeats of each: enough for a time judgement to claim."""

    return repeats + [
        msgspec.structs.replace(run, repeat=repeat) for repeat in (1, 2) for run in repeats
    ]


def make_result(milliseconds: float) -> dict:
    """A result whose recorded route runs at `milliseconds` per step."""
    runs = make_runs()
    runs[1] = Repeat(
        "recorded",
        0,
        "ok",
        runs[1].loss_bits,
        tuple(milliseconds / 1000 for _ in runs[1].loss_bits),
        peak_rss_bytes=780 * MEBIBYTE,
        ready_rss_bytes=200 * MEBIBYTE,
    )
    runs = three_repeats(runs)
    return compose_result(
        workload={"name": "cifar10"}, host={}, steps=20, repeats=runs, verdict=decide_verdict(runs)
    )


def test_the_comparison_renders_its_regressions():
    comparison = compare_results(make_result(100.0), make_result(130.0))
    text = render_comparison_plain(comparison)
    row = next(line for line in text.splitlines() if "recorded  ms/step" in line)
    assert row.split() == [
        "recorded",
        "ms/step",
        "100.0",
        "ms",
        "130.0",
        "ms",
        "+30.0%",
        "10%",
        "p",
        "=",
        "0,",
        "3",
        "repeats",
        "each,",
        "disturbance",
        "unknown",
        "regression",
    ]
    assert "cifar10: 1 regression (recorded ms/step +30.0%)" in text
    markdown = render_comparison_markdown(comparison)
    expected = (
        "| recorded | ms/step | 100.0 ms | 130.0 ms | +30.0% | 10% | p = 0, 3 repeats each, "
        "disturbance unknown | regression |"
    )
    assert expected in markdown
    stream = FakeTerminal()
    print_comparison(comparison, file=stream, plain=False)
    assert "topos compare: cifar10" in stream.getvalue()


@pytest.mark.parametrize(
    "module",
    [
        "topos_cli.shared.errors",
        "topos_cli.judge.statistics",
        "topos_cli.result.float_bits",
        "topos_cli.judge.verdict",
        "topos_cli.judge.compare",
        "topos_cli.result.result_file",
        "topos_cli.harness.host",
        "topos_cli.render.verdict_table",
        "topos_cli.render.comparison_table",
        "topos_cli.render.tables",
        "topos_cli.shared.units",
        "topos_cli.app",
        "topos_cli.commands.data_commands",
        "topos_cli.commands.grade",
        "topos_cli.harness.grade_preparation",
        "topos_cli.commands.result_composition",
        "topos_cli.harness.monitor",
        "topos_cli.harness.progress",
        "topos_cli.shared.interruption",
        "topos_cli.harness.rss_timeline",
        "topos_cli.result.tolerance",
        "topos_cli.commands.download_progress",
        "topos_cli.harness.data_option",
        "topos_cli.commands.check",
        "topos_cli.worker.route_worker",
        "topos_cli.worker.protocol",
        "topos_cli.harness.worker_process",
        "topos_cli.shared.exit_status",
        "topos_cli.harness.report_child",
        "topos_cli.result.lenient_result",
        "topos_cli.judge.history",
        "topos_cli.render.report_contents",
        "topos_cli.render.report_html",
        "topos_cli.render.history_table",
        "topos_cli.render.history_html",
    ],
)
def test_the_parent_side_modules_load_neither_numpy_nor_the_library_beyond_its_names(module):
    loaded, completed = heavy_modules_loaded(f"import {module}", Path(__file__).parents[3])
    assert completed.returncode == 0, completed.stderr
    assert loaded == "loaded []"

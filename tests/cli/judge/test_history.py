"""Tests of `topos history`: results in time order, groups never mixed, significant changes
marked as `compare` judges them, a table and a page with a plot per figure."""

from __future__ import annotations

import json
import re

from tests.cli.grading import one_line_error, topos
from tests.cli.result_examples import example_result
from topos_cli.judge.history import read_history
from topos_cli.render.history_html import render_history_html
from topos_cli.render.history_table import render_history_plain


def write_history(folder):
    """Three grades at default threads (the third 40% slower on recorded, over three
    repeats each, so the test on per-repeat medians can call it), one at 1 thread, written
    out of time order."""
    folder.mkdir()
    grades = {
        "c.json": example_result(
            repeats=3, created="2026-08-16T10:00:00Z", commit="c" * 40, ms_scale={"recorded": 1.4}
        ),
        "a.json": example_result(repeats=3, created="2026-08-14T10:00:00Z", commit="a" * 40),
        "b.json": example_result(repeats=3, created="2026-08-15T10:00:00Z", commit="b" * 40),
        "t.json": example_result(
            repeats=3, created="2026-08-15T12:00:00Z", commit="b" * 40, threads=1
        ),
    }
    for name, result in grades.items():
        (folder / name).write_text(json.dumps(result))
    (folder / "benchmark.json").write_text("[]")
    return folder


def test_results_are_ordered_grouped_and_their_significant_changes_marked(tmp_path):
    history = read_history([write_history(tmp_path / "results")])
    assert [len(group.points) for group in history.groups] == [3, 1]
    first = history.groups[0]
    assert [point.commit for point in first.points] == ["a" * 12, "b" * 12, "c" * 12]
    assert dict(history.groups[1].key)["threads"] == "1"
    last = first.points[-1]
    assert last.significant("recorded", "ms/step") == "regression"
    assert last.significant("engine", "ms/step") is None
    assert first.points[1].significant("recorded", "ms/step") is None
    assert history.grouping_note == (
        "2 groups, drawn apart and never mixed: the results differ in threads"
    )
    assert any("benchmark.json is not a topos result" in reason for reason in history.skipped)

    text = render_history_plain(history)
    assert "2 groups, drawn apart and never mixed" in text
    rows = [line for line in text.splitlines() if line.startswith("2026-08-16")]
    recorded = next(line for line in rows if " recorded " in line)
    assert "(+40.0%) ▲" in recorded
    assert "▲" not in next(line for line in rows if " engine " in line)
    assert "^" in render_history_plain(history, ascii_only=True)


def test_the_page_has_a_plot_per_figure_and_marks_the_regression(tmp_path):
    history = read_history([write_history(tmp_path / "results")])
    page = render_history_html(history)
    plots = re.findall(r"<svg.*?</svg>", page, flags=re.DOTALL)
    # A figure (a panel per figure) per group of several grades; the group of one grade at
    # 1 thread is its table's row, not three charts of one dot.
    assert len(plots) == 1
    for title in ("ms/step", "peak RSS", "training delta"):
        assert f">{title}<" in plots[0]
    assert 'id="significant-regression-recorded-2"' in plots[0]
    assert 'id="trend-engine"' in plots[0] and 'id="trend-recorded"' in plots[0]
    assert "median time per step (ms)" in plots[0] and "peak RSS (MiB)" in plots[0]


def test_topos_history_prints_the_table_and_writes_the_page(tmp_path):
    folder = write_history(tmp_path / "results")
    completed = topos("history", "--workload", "cifar10", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert "cifar10 · 30 steps, threads default" in completed.stdout
    assert f"history: {folder / 'history.html'}".replace(str(tmp_path) + "/", "") in (
        completed.stderr
    )
    assert "<svg" in (folder / "history.html").read_text(encoding="utf-8")
    (tmp_path / "empty").mkdir()
    refused = topos("history", "empty", cwd=tmp_path)
    assert refused.returncode == 2
    assert "no topos grade results" in one_line_error(refused)


def test_a_route_that_never_completed_says_how_it_ended_not_a_row_of_dashes(tmp_path):
    path = tmp_path / "failed.json"
    path.write_text(json.dumps(example_result(failed=True)))
    text = render_history_plain(read_history([path]))
    rows = {line.split()[2]: line.split()[3:] for line in text.splitlines() if "T10:15" in line}
    assert rows["recorded"][0] == "failed"
    assert "failed" not in rows["engine"]

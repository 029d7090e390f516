"""The history as shown: a group of one grade is a row (no trend of one dot), each value
has its spread, each grade links to its report, and the trend figure of up to eight
routes has no overlapping text."""

from __future__ import annotations

import copy
import json

import pytest

from tests.cli.drawn_text import assert_readable
from tests.cli.result_examples import example_result, some_routes
from topos_cli.judge.history import read_history
from topos_cli.render.history_html import render_history_html
from topos_cli.render.history_table import history_rows
from topos_cli.render.trend_figure import trend_figure


def write_grades(folder, count: int, grades: int = 3, lone: bool = True):
    """`grades` grades of `count` routes over two repeats (the last 40% slower on engine),
    each with a report beside it, and, if `lone`, one grade at another thread count.

    The grades before the last are one result (judged once: eight routes take a third
    of a second) under each grade's own date and commit, as `example_result` writes them."""
    same = example_result(repeats=2, routes=some_routes(count))
    for day in range(grades):
        created, commit = f"2026-08-{14 + day}T10:00:00Z", f"{day}" * 40
        if day == grades - 1:
            result = example_result(
                repeats=2,
                routes=some_routes(count),
                created=created,
                commit=commit,
                ms_scale={"engine": 1.4},
            )
        else:
            result = copy.deepcopy(same)
            result["created"], result["host"]["git"]["commit"] = created, commit
        (folder / f"g{day}.json").write_text(json.dumps(result))
        (folder / f"g{day}.html").write_text("<html></html>")
    if lone:
        result = example_result(
            repeats=2, routes=some_routes(count), created="2026-08-20T10:00:00Z", threads=1
        )
        (folder / "lone.json").write_text(json.dumps(result))
    return folder


def test_each_value_shows_its_spread_over_the_repeats(tmp_path):
    history = read_history([write_grades(tmp_path, 2, lone=False)])
    point = history.groups[0].points[0]
    low, high = point.spreads[("engine", "ms/step")]
    assert low < point.values[("engine", "ms/step")] <= high
    row = history_rows(history.groups[0])[0]
    assert f"[{low:.2f}–{high:.2f}]" in row[3]


def test_a_group_of_one_grade_is_a_row_and_every_grade_links_to_its_report(tmp_path):
    history = read_history([write_grades(tmp_path, 2)])
    assert sorted(len(group.points) for group in history.groups) == [1, 3]
    page = render_history_html(history, tmp_path / "history.html")
    # One trend figure: the group of three; the lone grade is its table's rows.
    assert page.count("<figure") == 1
    for day in range(3):
        assert f'<a href="g{day}.html">' in page
    assert "2026-08-20T10:00:00Z" in page  # the lone grade's row, without a report to link
    assert '<a href="lone.html">' not in page


@pytest.mark.parametrize("count", [1, 3, 8])
def test_the_trend_of_up_to_eight_routes_has_no_overlapping_text(tmp_path, count):
    history = read_history([write_grades(tmp_path, count, grades=12, lone=False)])
    figure = trend_figure(history.groups[0], links=["g0.html"] + [None] * 11)
    assert_readable(figure)

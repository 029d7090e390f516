"""The report's figures with one to eight routes: no two drawn texts (titles, axis labels,
tick labels, legend entries, annotations) overlap, all lie inside the figure, and no
legend covers a plot."""

from __future__ import annotations

import functools

import pytest

from tests.cli.drawn_text import assert_readable
from tests.cli.result_examples import example_result, some_routes
from topos_cli.render import grade_figures
from topos_cli.render.report_contents import gather_report_contents
from topos_cli.result.lenient_result import interpret_result

FIGURES = {
    "memory": grade_figures.memory_figure,
    "steps": grade_figures.step_time_figure,
    "loss": grade_figures.loss_figure,
    "overview": grade_figures.overview_figure,
}


@functools.cache
def contents_of(count: int, **options):
    """The report contents of a grade of `count` routes over two repeats. Made once a
    process for each `count` and options (a grade of eight routes takes half a second
    to judge, and up to four tests draw it); they are frozen, and drawing reads them."""
    result = example_result(repeats=2, routes=some_routes(count), **options)
    return gather_report_contents(interpret_result(result, "test"))


@pytest.mark.parametrize("count", range(1, 9))
def test_the_overview_of_one_to_eight_routes_has_no_overlapping_text(count):
    assert_readable(grade_figures.overview_figure(contents_of(count)))


@pytest.mark.parametrize("name", ["memory", "steps", "loss"])
@pytest.mark.parametrize("count", [1, 3, 8])
def test_each_figure_of_the_page_has_no_overlapping_text(name, count):
    assert_readable(FIGURES[name](contents_of(count)))


@pytest.mark.parametrize("count", [2, 8])
def test_a_broken_parity_and_a_failed_route_still_draw_no_overlapping_text(count):
    assert_readable(grade_figures.overview_figure(contents_of(count, broken_at=7)))
    assert_readable(grade_figures.overview_figure(contents_of(count, failed=True)))

"""Counted work (`grade --measure instructions`) shown beside the clock: per route in the
report's own table, and in history's table, trend and site: a counted trend is flat where
the code did not change, and a change of work is marked as `compare` judges it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.result_examples import example_result
from topos_cli.judge.history import COUNTED, read_history
from topos_cli.render.history_html import render_history_html
from topos_cli.render.history_site import site_pages
from topos_cli.render.history_table import render_history_plain
from topos_cli.render.report_contents import gather_report_contents
from topos_cli.render.report_html import render_report_html
from topos_cli.result.instruction_counts import RouteCounts
from topos_cli.result.lenient_result import interpret_result
from topos_cli.result.worker_facts import Numerics

#: Both routes' counted steps: the first does one-off work and is not judged.
ENGINE_STEPS = [1_300_000, 1_000_000, 1_000_040, 999_960]
RECORDED_STEPS = [1_250_000, 1_200_000, 1_200_030, 1_199_970]


def counts(route: str, steps: list[int]) -> dict:
    """A route's counts as `grade --measure instructions` writes them."""
    pools = [{"user_api": "blas", "internal_api": "openblas", "architecture": "Haswell"}]
    return RouteCounts(
        route=route,
        status="counted",
        per_step=steps,
        tool="valgrind-3.19.0 callgrind",
        numerics=Numerics.from_json({"thread_pools": pools, "simd": ["X86_V3"]}),
    ).to_json()


def counted_result(recorded_scale: float = 1.0, **made: object) -> dict:
    """An example result of engine and recorded whose work was counted; recorded's counts
    scaled by `recorded_scale`."""
    result = example_result(repeats=3, **made)
    result["counts"] = [
        counts("engine", ENGINE_STEPS),
        counts("recorded", [round(step * recorded_scale) for step in RECORDED_STEPS]),
    ]
    return result


def test_the_report_has_a_row_of_counted_work_per_route() -> None:
    contents = gather_report_contents(interpret_result(counted_result(), "test"))
    page = render_report_html(contents, svgs={"memory": "", "steps": "", "loss": ""})
    assert "<h2>Counted work</h2>" in page and 'id="counts"' in page
    # Medians of the judged steps, and recorded's over the reference's.
    assert "1.000 M" in page and "1.200 M" in page and "1.200x" in page
    assert "not a sleep, I/O" in page
    uncounted = gather_report_contents(interpret_result(example_result(repeats=3), "test"))
    plain = render_report_html(uncounted, svgs={"memory": "", "steps": "", "loss": ""})
    assert "Counted work" not in plain


def write_counted_history(folder: Path) -> Path:
    """Three counted grades: the second the same code as the first, the third executing
    3% more work a step on recorded."""
    folder.mkdir()
    grades = {
        "a.json": counted_result(created="2026-08-14T10:00:00Z", commit="a" * 40),
        "b.json": counted_result(created="2026-08-15T10:00:00Z", commit="b" * 40),
        "c.json": counted_result(1.03, created="2026-08-16T10:00:00Z", commit="c" * 40),
    }
    for name, result in grades.items():
        (folder / name).write_text(json.dumps(result))
    return folder


def test_a_counted_trend_is_flat_where_the_code_did_not_change(tmp_path: Path) -> None:
    (group,) = read_history([write_counted_history(tmp_path / "results")]).groups
    assert group.counted and COUNTED in group.figures
    first, same, more = group.points
    for route in ("engine", "recorded"):
        assert first.values[(route, COUNTED)] == same.values[(route, COUNTED)]
        assert same.changes[(route, COUNTED)].status == "no change"
        assert same.changes[(route, COUNTED)].change == 0.0
        assert same.significant(route, COUNTED) is None
    assert more.values[("engine", COUNTED)] == first.values[("engine", COUNTED)]
    assert more.significant("recorded", COUNTED) == "regression"
    assert more.significant("engine", COUNTED) is None


def test_history_tables_and_site_show_the_counted_trend(tmp_path: Path) -> None:
    history = read_history([write_counted_history(tmp_path / "results")])
    text = render_history_plain(history)
    assert "instructions/step" in text
    assert "1.000 M (+0.0%)" in text and "1.236 M (+3.0%) ▲" in text
    page = render_history_html(history)
    # The trend has a panel of counted work beside time and memory.
    assert page.count("instructions per step (millions") == 1
    pages = site_pages(history)
    assert any("instructions/step" in body for body in pages.values())
    uncounted = tmp_path / "plain"
    uncounted.mkdir()
    (uncounted / "a.json").write_text(json.dumps(example_result(repeats=3)))
    assert "instructions/step" not in render_history_plain(read_history([uncounted]))

"""Tests of a grade's report: the page holds a figure per panel, draws every route, says the
JSON's numbers, fetches nothing, survives damaged input, and never costs a grade."""

from __future__ import annotations

import json
import re

import pytest

from tests.cli.grading import TINY, grade_tiny, one_line_error, topos
from tests.cli.result_examples import MEBIBYTE, ROUTES, example_result
from topos_cli.render.report_html import write_report
from topos_cli.shared.errors import ResultFileError
from topos_cli.shared.units import format_milliseconds


def write(tmp_path, result, name="result.json"):
    path = tmp_path / name
    path.write_text(json.dumps(result))
    return path


def report_of(tmp_path, result, name="result.json"):
    """Draws the report of `result` and returns the page's text and what was missing."""
    path = write(tmp_path, result, name)
    written, missing = write_report(path)
    assert written == [tmp_path / name.replace(".json", ".html")]
    return written[0].read_text(encoding="utf-8"), missing


def svgs(page):
    return re.findall(r"<svg.*?</svg>", page, flags=re.DOTALL)


def cell_texts(page, table_id):
    table = re.search(rf'<table id="{table_id}">(.*?)</table>', page, flags=re.DOTALL).group(1)
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", table)]
    return [row for row in rows if row]


def test_the_report_has_a_figure_per_panel_and_draws_every_route(tmp_path):
    page, missing = report_of(tmp_path, example_result(repeats=2))
    assert missing == ()
    memory, steps, loss = svgs(page)
    for route in ROUTES:
        for repeat in (0, 1):
            assert f'id="rss-{route}-{repeat}"' in memory
            assert f'id="steps-{route}-{repeat}"' in steps
            assert f'id="loss-{route}-{repeat}"' in loss
        assert f'id="ready-{route}"' in memory
        assert f'id="delta-measured-{route}"' in memory
        assert f'id="delta-predicted-{route}"' in memory
        assert f'id="steps-box-{route}"' in steps
    # The axes say their units, and text is text (readable, searchable).
    assert "resident memory, RSS (MiB)" in memory
    assert "time per step (ms)" in steps
    assert "training loss (cross-entropy)" in loss
    assert "bit-identical over 30 steps" in loss


def test_the_numbers_in_the_report_are_those_of_the_json(tmp_path):
    result = example_result()
    page, _ = report_of(tmp_path, result)
    assert result["verdict"]["summary"] in page
    rows = {row[0]: row for row in cell_texts(page, "verdict")}
    for route in result["verdict"]["routes"]:
        row = rows[route["route"]]
        speed = route["speed"]["milliseconds_per_step"]
        assert row[2].startswith(format_milliseconds(speed["median"]) + " ± ")
        assert row[6] == f"{route['memory']['peak_rss_bytes'] / MEBIBYTE:.1f}"
        assert row[7] == f"{route['memory']['training_delta_bytes'] / MEBIBYTE:.1f}"
    memory = {row[0]: row for row in cell_texts(page, "memory")}
    for prediction in result["memory_prediction"]:
        row = memory[prediction["route"]]
        assert row[6] == f"{prediction['predicted_training_bytes'] / MEBIBYTE:.1f}"
        ready = ROUTES[prediction["route"]][1] * MEBIBYTE
        assert row[4] == f"{(ready + prediction['predicted_training_bytes']) / MEBIBYTE:.1f}"
    losses = {row[0]: row for row in cell_texts(page, "losses")}
    for repeat in result["repeats"]:
        assert losses[repeat["route"]][3] == f"{repeat['first_loss']:.6f}"
        assert losses[repeat["route"]][4] == f"{repeat['final_loss']:.6f}"


def test_the_page_fetches_nothing_when_viewed(tmp_path):
    page, _ = report_of(tmp_path, example_result())
    for forbidden in ("<script", "<link", "<img", "<iframe", "@import", "src="):
        assert forbidden not in page
    # Every reference points inside the page (a clip path, a marker defined once);
    # the SVG namespace's address is a name, never fetched.
    assert all(target.startswith("#") for target in re.findall(r"url\(([^)]*)\)", page))
    assert all(target.startswith("#") for target in re.findall(r'href="([^"]*)"', page))


def test_a_broken_parity_is_marked_at_its_step(tmp_path):
    page, _ = report_of(tmp_path, example_result(broken_at=7))
    loss = svgs(page)[2]
    assert "parity broken at step 7" in loss
    assert 'id="divergence"' in loss


def damaged(kind):
    result = example_result()
    if kind == "another schema":
        result["schema"] = "topos.grade/0"
        return json.dumps(result), "schema topos.grade/0"
    if kind == "no timeline":
        for repeat in result["repeats"]:
            del repeat["facts"]["rss_timeline"]
        return json.dumps(result), "engine: no RSS timeline"
    if kind == "failed route":
        return json.dumps(example_result(failed=True)), "recorded failed: ValueError: boom"
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["another schema", "no timeline", "failed route"])
def test_a_damaged_result_is_drawn_as_far_as_it_goes_and_says_what_is_missing(tmp_path, kind):
    text, expected = damaged(kind)
    path = tmp_path / "result.json"
    path.write_text(text)
    written, missing = write_report(path)
    page = written[0].read_text(encoding="utf-8")
    assert any(expected in line for line in missing), missing
    assert "What this report could not show" in page
    assert len(svgs(page)) == 3
    assert 'id="rss-engine-0"' in page or kind == "no timeline"
    assert 'id="loss-engine-0"' in page


def test_a_result_cut_short_is_refused_in_one_line(tmp_path):
    # A result is written atomically: a file cut short was damaged, and is no result.
    text = json.dumps(example_result(), indent=2)
    path = tmp_path / "result.json"
    path.write_text(text[: text.index('"route": "recorded"') + 200])
    with pytest.raises(ResultFileError, match=r"is not a topos result \(not JSON: .*truncated"):
        write_report(path)


def test_topos_report_writes_what_it_is_asked_and_refuses_what_is_no_result(tmp_path):
    path = write(tmp_path, example_result())
    completed = topos(
        "report",
        str(path),
        "--html",
        "page.html",
        "--png",
        "panels.png",
        cwd=tmp_path,
        TOPOS_REPORT="on",
    )
    assert completed.returncode == 0, completed.stderr
    assert "report: page.html" in completed.stderr
    assert (tmp_path / "panels.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (tmp_path / "page.html").read_text(encoding="utf-8")
    (tmp_path / "other.json").write_text('{"name": "not a grade"}')
    refused = topos("report", "other.json", cwd=tmp_path)
    assert refused.returncode == 2
    assert "is not a topos result" in one_line_error(refused)
    assert not (tmp_path / "other.html").exists()


def test_a_grade_writes_its_report_beside_its_result(tmp_path):
    completed, result = grade_tiny("tiny", tmp_path, steps=4, TOPOS_REPORT="on")
    assert completed.returncode == 0, completed.stderr
    lines = completed.stderr.splitlines()
    results_line = lines.index(f"results: {tmp_path / 'result.json'}")
    assert lines[results_line + 1] == f"report: {tmp_path / 'result.html'}"
    page = (tmp_path / "result.html").read_text(encoding="utf-8")
    assert result["verdict"]["summary"] in page
    assert len(svgs(page)) == 3


def test_a_report_that_cannot_be_drawn_costs_neither_the_result_nor_the_exit_status(tmp_path):
    # A matplotlib that cannot be imported, first on the drawing child's path.
    broken = tmp_path / "broken"
    (broken / "matplotlib").mkdir(parents=True)
    (broken / "matplotlib" / "__init__.py").write_text("raise ImportError('broken on purpose')\n")
    from tests.cli.grading import ROOT

    completed = topos(
        "grade",
        "--workload",
        TINY + "tiny",
        "--steps",
        "3",
        "--json",
        "result.json",
        cwd=tmp_path,
        TOPOS_REPORT="on",
        PYTHONPATH=f"{ROOT}:{broken}",
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads((tmp_path / "result.json").read_text())["status"] == "complete"
    warning = [line for line in completed.stderr.splitlines() if "warning: the report" in line]
    assert len(warning) == 1 and "broken on purpose" in warning[0], completed.stderr
    assert "the result is intact" in warning[0]
    assert not (tmp_path / "result.html").exists()


def test_the_report_judges_time_anew_and_exactly_as_the_grade_did():
    """A report shows the verdict the grade stored; a result written before the verdict
    kept every word the report reads (`keeps_every_word`) is judged anew from its runs
    through the one time judgement (seeded, so bit for bit the stored one), and then a
    tampered stored ratio changes nothing."""
    from topos_cli.render.report_contents import gather_report_contents
    from topos_cli.result.lenient_result import interpret_result

    result = example_result(steps=40, ms_scale={"recorded": 0.8})
    stored = result["verdict"]

    def contents_of(data):
        return gather_report_contents(interpret_result(data, "test"))

    assert contents_of(result).verdict.to_json()["routes"] == stored["routes"]
    tampered = json.loads(json.dumps(result))
    del tampered["verdict"]["told_apart"]  # as written before it was kept
    for route in tampered["verdict"]["routes"]:
        if route["speed"]["ratio"] is not None:
            route["speed"]["ratio"]["time_ratio"]["ratio"] *= 1.5
    assert contents_of(tampered).verdict.to_json()["routes"] == stored["routes"]

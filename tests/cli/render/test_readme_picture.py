"""The README's picture is drawn by a script from a committed result: the script runs, and
what it draws has no overlapping text."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.cli.drawn_text import assert_readable
from topos_cli.render.grade_figures import overview_figure
from topos_cli.render.report_contents import gather_report_contents
from topos_cli.result.lenient_result import read_result_leniently

DOCS = Path(__file__).parents[3] / "docs"


def load_script():
    spec = importlib.util.spec_from_file_location(
        "draw_readme_picture", DOCS / "draw_readme_picture.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_draws_the_picture_from_the_committed_result(tmp_path):
    script = load_script()
    assert script.RESULT.exists()
    assert script.PICTURE.name in (DOCS.parent / "README.md").read_text(encoding="utf-8")
    picture = script.draw_readme_picture(output=tmp_path / "picture.png")
    assert picture.read_bytes().startswith(b"\x89PNG")


def test_the_readme_picture_has_no_overlapping_text():
    contents = gather_report_contents(read_result_leniently(DOCS / "readme-result.json"))
    assert contents.missing == ()
    figure = overview_figure(contents)
    assert_readable(figure)

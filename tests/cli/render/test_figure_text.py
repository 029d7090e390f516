"""Text in figures is drawn as written, never parsed as matplotlib mathtext: a route, a
commit or a data folder with dollar signs and backslashes draws the report, its PNG and
the history page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.result_examples import example_result

pytest.importorskip("matplotlib")

ROUTE = "a$\\foo$b"
COMMIT = "$\\q$abcdef0123456789"
FOLDER = "price_$5_$10"


def _hostile_result(folder: Path, name: str, created: str) -> Path:
    data = example_result(commit=COMMIT, created=created)
    data["workload"]["data"].update(requested=FOLDER, source=f"/data/{FOLDER}", name=FOLDER)
    text = json.dumps(data).replace('"recorded"', json.dumps(ROUTE))
    path = folder / name
    path.write_text(text)
    return path


def test_report_html_and_png_draw_user_text_as_written(tmp_path: Path) -> None:
    from topos_cli.render.report_html import write_report

    result = _hostile_result(tmp_path, "r.json", "2026-08-14T10:15:00Z")
    written, _ = write_report(result, html_path=tmp_path / "r.html", png_path=tmp_path / "r.png")
    assert [path.name for path in written] == ["r.html", "r.png"]
    page = (tmp_path / "r.html").read_text()
    assert "a$\\foo$b" in page  # in the figures' SVG text, not parsed away
    assert (tmp_path / "r.png").read_bytes().startswith(b"\x89PNG")


def test_history_draws_user_text_as_written(tmp_path: Path) -> None:
    from topos_cli.judge.history import read_history
    from topos_cli.render.history_html import write_history_html

    _hostile_result(tmp_path, "one.json", "2026-08-14T10:15:00Z")
    _hostile_result(tmp_path, "two.json", "2026-08-15T10:15:00Z")
    found = read_history([str(tmp_path)])
    write_history_html(found, tmp_path / "history.html")
    assert "$\\q$abc" in (tmp_path / "history.html").read_text()

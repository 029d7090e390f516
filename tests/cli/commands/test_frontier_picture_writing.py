"""The frontier's picture, written beside its result by `write_picture` (both frontiers,
topos's and a native step's): written whole, or one error line and the result kept."""

from __future__ import annotations

import io

from topos_cli.commands.frontier import write_picture
from topos_cli.shared.errors import ToposError


def test_the_picture_is_written_and_its_path_said(tmp_path):
    picture = tmp_path / "frontier.svg"
    stderr = io.StringIO()
    assert write_picture(picture, lambda: "<svg>é</svg>", stderr) == picture
    assert picture.read_text(encoding="utf-8") == "<svg>é</svg>"
    assert stderr.getvalue() == ""


def test_a_folder_where_the_picture_goes_is_one_line_and_no_picture(tmp_path):
    picture = tmp_path / "frontier.svg"
    picture.mkdir()  # put there after the grade began: checked again before writing
    stderr = io.StringIO()
    assert write_picture(picture, lambda: "<svg/>", stderr) is None
    (line,) = stderr.getvalue().splitlines()
    assert line.startswith("topos: error: ") and str(picture) in line
    assert picture.is_dir()


def test_a_picture_that_cannot_be_drawn_is_one_line_and_writes_nothing(tmp_path):
    picture = tmp_path / "frontier.svg"

    def refused() -> str:
        raise ToposError("no point to draw")

    stderr = io.StringIO()
    assert write_picture(picture, refused, stderr) is None
    assert stderr.getvalue() == "topos: error: no point to draw\n"
    assert not picture.exists()


def test_a_folder_that_cannot_be_written_is_one_line_naming_the_picture(tmp_path):
    folder = tmp_path / "result.json"
    folder.write_text("{}")
    picture = folder / "frontier.svg"  # its "folder" is a file
    stderr = io.StringIO()
    assert write_picture(picture, lambda: "<svg/>", stderr) is None
    (line,) = stderr.getvalue().splitlines()
    assert line.startswith("topos: error: ") and str(picture) in line

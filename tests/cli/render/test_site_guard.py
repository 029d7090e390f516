"""Every file `topos history --site` writes goes through the one guarded writer (issue 43,
class 2): pages planted beforehand as a link to an input, a FIFO, or a folder linked
elsewhere are neither followed nor replaced, the input is untouched, names made from
user data fit the file system, and the rest of the site is written."""

from __future__ import annotations

import json
import os
import stat
import zipfile
from pathlib import Path

from tests.cli.grading import one_line_error, topos
from tests.cli.render.test_machines import grades
from topos_cli.judge.history import read_history
from topos_cli.render.history_site import site_pages

#: The longest name ext4, APFS and NTFS take for one file.
LONGEST_NAME_BYTES = 255


def results_folder(tmp_path: Path, count: int = 2) -> Path:
    """A folder of the first `count` of a machine's two grades."""
    folder = tmp_path / "results"
    folder.mkdir()
    for name, result in list(grades("ubuntu-latest").items())[:count]:
        (folder / name).write_text(json.dumps(result))
    return folder


def test_no_page_planted_as_a_link_or_a_fifo_is_followed_or_replaced(tmp_path):
    inputs = results_folder(tmp_path)
    before = {path: path.read_bytes() for path in inputs.iterdir()}
    pages = sorted(site_pages(read_history([inputs])))
    reports = [page for page in pages if "/reports/" in page]
    trend = next(page for page in pages if page.count("/") == 1)
    site = tmp_path / "site"
    # The first report is a link to the input it is drawn from; the trend page and the
    # marker file are FIFOs (writing one would hang, replacing it would destroy it).
    first = site / reports[0]
    first.parent.mkdir(parents=True)
    first.symlink_to(inputs / sorted(before)[0].name)
    os.mkfifo(site / trend)
    os.mkfifo(site / ".nojekyll")
    completed = topos("history", str(inputs), "--site", str(site), cwd=tmp_path, timeout=120)
    assert completed.returncode == 2, completed.stderr
    error = one_line_error(completed)
    assert "symbolic link" in error and "2 more" in error, error
    assert {path: path.read_bytes() for path in inputs.iterdir()} == before
    assert first.is_symlink()
    assert stat.S_ISFIFO((site / trend).stat().st_mode)
    assert stat.S_ISFIFO((site / ".nojekyll").stat().st_mode)
    # One bad page never costs the whole site: the index and the other report are written.
    assert "<html" in (site / "index.html").read_text()
    assert "<html" in (site / reports[1]).read_text()


def test_a_machine_folder_planted_as_a_link_to_an_input_folder_is_not_followed(tmp_path):
    # One grade: the machine's folder is the same with one page in it or many, and each
    # page is a report to draw.
    inputs = results_folder(tmp_path, count=1)
    before = sorted(path.name for path in inputs.iterdir())
    machine = next(page for page in site_pages(read_history([inputs])) if "/" in page)
    site = tmp_path / "site"
    site.mkdir()
    (site / machine.split("/")[0]).symlink_to(inputs, target_is_directory=True)
    completed = topos("history", str(inputs), "--site", str(site), cwd=tmp_path, timeout=120)
    assert completed.returncode == 2, completed.stderr
    assert "symbolic link" in one_line_error(completed)
    assert sorted(path.name for path in inputs.iterdir()) == before
    assert (site / "index.html").exists()


def test_a_member_name_too_long_for_the_file_system_makes_a_page_that_fits(tmp_path):
    result, other = grades("ubuntu-latest").values()
    long_name = "r" * 300
    archive = tmp_path / "artifact.zip"
    with zipfile.ZipFile(archive, "w") as packed:
        packed.writestr(f"{long_name}.json", json.dumps(result))
        packed.writestr(f"{long_name}x.json", json.dumps(other))  # shares the first 300
    site = tmp_path / "site"
    completed = topos("history", str(archive), "--site", str(site), cwd=tmp_path, timeout=120)
    assert completed.returncode == 0, completed.stderr
    reports = sorted((site).glob("*/reports/*.html"))
    assert len(reports) == 2
    assert all(len(path.name.encode()) < LONGEST_NAME_BYTES for path in reports)
    index = next(site.glob("*/*.html")).read_text()
    for report in reports:
        assert f'href="reports/{report.name}"' in index


def test_fitting_names_stay_apart_and_fit():
    from topos_cli.shared.output_path import fitting_name

    first, second = fitting_name("é" * 200 + "a"), fitting_name("é" * 200 + "b")
    assert first != second
    assert len(first.encode()) <= 100 and len(second.encode()) <= 100
    assert fitting_name("short") == "short"

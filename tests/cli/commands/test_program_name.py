"""`topos` is named `topos` in its usage lines and hints however it was started: as the
console script, or as `python -m topos_cli.console_script` (which the docs' reference
page and the tests use), never by the interpreter's command line."""

from __future__ import annotations

from tests.cli.grading import topos


def test_a_mistake_points_at_topos_help(tmp_path):
    completed = topos("grade", "--no-such-option", cwd=tmp_path)
    assert completed.returncode == 2
    (line,) = completed.stderr.strip().splitlines()
    assert line.endswith("(see 'topos grade --help')"), line


def test_the_help_names_the_command_topos(tmp_path):
    completed = topos("report", "--help", cwd=tmp_path, COLUMNS="100")
    assert completed.returncode == 0, completed.stderr
    assert "Usage: topos report [OPTIONS]" in completed.stdout
    assert "console_script" not in completed.stdout

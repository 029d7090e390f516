"""The benchmarks that grade spell `topos grade` once, in benchmarks/grade_command.py:
a second spelling (its own `python -m topos_cli.console_script grade` and JSON reading)
is the duplicate issue 44 removed."""

from __future__ import annotations

from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_only_grade_command_spells_the_command():
    spelled = [
        path.name
        for path in sorted(BENCHMARKS.glob("*.py"))
        if path.name != "grade_command.py" and "topos_cli.console_script" in path.read_text()
    ]
    assert spelled == []

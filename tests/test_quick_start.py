"""The README's quick start and CI agree: `.ci/run` runs the README's test command verbatim."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^    (pip install .+)$", section, flags=re.MULTILINE)


def test_the_quick_start_is_two_commands():
    commands = quick_start_commands()
    assert len(commands) == 2
    assert commands[0].endswith("topos grade")


def test_ci_runs_the_readme_test_command_verbatim():
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert quick_start_commands()[1] in ci_lines


def test_the_site_gives_the_readme_test_command():
    """The documentation site's getting-started page repeats the README's command; a
    change to one that misses the other (an extra, a pytest flag) fails here."""
    page = (ROOT / "docs" / "guide" / "getting-started.md").read_text()
    assert f"\n    {quick_start_commands()[1]}\n" in page

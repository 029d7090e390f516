"""The README stays a five-minute read, its code runs, and the documentation site's
navigation and pages agree. (`mkdocs build --strict` in `.ci/run` checks the links
between pages and the API reference; these check what it cannot, or cheaply.)"""

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def nav_pages(entries) -> list[str]:
    """Every page path the nav lists, depth first."""
    pages = []
    for entry in entries:
        if isinstance(entry, str):
            pages.append(entry)
        elif isinstance(entry, dict):
            for value in entry.values():
                pages.extend(nav_pages(value) if isinstance(value, list) else [value])
    return pages


def mkdocs_config() -> dict:
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def test_the_readme_is_at_most_300_lines():
    lines = README.read_text().count("\n")
    assert lines <= 300, f"README.md has {lines} lines; move reference material into docs/"


def test_every_nav_page_exists_and_every_page_is_in_the_nav():
    listed = nav_pages(mkdocs_config()["nav"])
    assert len(listed) == len(set(listed)), "a page is listed twice in the nav"
    missing = [page for page in listed if not (DOCS / page).is_file()]
    assert not missing, f"mkdocs.yml lists pages that do not exist: {missing}"
    pages = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert not pages - set(listed), f"pages not in the nav: {sorted(pages - set(listed))}"


def test_the_site_builds_strictly_and_without_importing():
    config = mkdocs_config()
    assert config["strict"] is True
    assert config["theme"]["name"] == "material"
    assert set(config["validation"].values()) == {"warn"}  # warnings fail a strict build
    handler = next(p["mkdocstrings"] for p in config["plugins"] if isinstance(p, dict))
    assert "python" in handler["handlers"]


def test_the_readmes_links_point_at_files_that_exist():
    text = README.read_text()
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [target for target in targets if "://" not in target]
    assert any(target.startswith("docs/") for target in local)
    missing = [target for target in local if not (ROOT / target).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_the_readmes_workload_is_the_example_file_verbatim():
    blocks = code_blocks(README.read_text(), "python")
    (workload,) = [block for block in blocks if "Workload(" in block]
    assert workload in (ROOT / "examples" / "tiny_workload.py").read_text()


def test_the_readmes_library_screen_runs():
    blocks = code_blocks(README.read_text(), "python")
    (screen,) = [block for block in blocks if "Tape()" in block]
    completed = subprocess.run(
        [sys.executable, "-c", screen],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert "plan: forward;" in completed.stdout


def test_every_command_has_a_section_in_the_cli_reference():
    completed = subprocess.run(
        [sys.executable, "-c", "from topos_cli.console_script import main; main()", "--help"],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    commands_box = completed.stdout.split("Commands", 1)[1]
    commands = re.findall(r"^[│|] ([a-z][a-z-]*) ", commands_box, flags=re.MULTILINE)
    assert "grade" in commands
    reference = (DOCS / "reference" / "cli.md").read_text()
    undocumented = [name for name in commands if f"## topos {name}" not in reference]
    assert not undocumented, f"docs/reference/cli.md lacks: {undocumented}"


def test_the_cli_reference_is_the_commands_own_help():
    # The page is written from `--help` (docs/write_cli_reference.py); a command whose
    # options changed makes it stale, and this says so until it is written again.
    completed = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "write_cli_reference.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr

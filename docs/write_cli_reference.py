"""Writes docs/reference/cli.md from the commands' own `--help`, so the page cannot drift
from the command line (a test checks the committed page against a fresh one).

    PYTHONPATH=$PWD python docs/write_cli_reference.py [--check]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAGE = HERE / "reference" / "cli.md"

#: The commands, in the order a reader meets them.
COMMANDS = (
    ("grade",),
    ("check",),
    ("compare",),
    ("report",),
    ("history",),
    ("describe",),
    ("frontier",),
    ("train",),
    ("data", "fetch"),
    ("data", "info"),
)

INTRODUCTION = """# CLI commands

Every command of `topos`, as its `--help` prints it (`topos COMMAND --help`); this page
is written from that output by `docs/write_cli_reference.py`. A shorter tour is
[Commands](../guide/commands.md); what the exit statuses mean is
[Exit statuses](exit-statuses.md).

Options that take a workload accept `cifar10`, `mnist`, `gpt`, `llama` and their variants
([Built-in workloads](workloads.md)), a `topos.workloads` entry point, or
`package.module:attribute` ([Your own model](../guide/your-own-model.md)).
"""


def help_text(command: tuple[str, ...]) -> str:
    """`topos COMMAND --help`, plain (no colour, a fixed width), trailing spaces trimmed."""
    environment = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100", "TERM": "dumb"}
    completed = subprocess.run(
        [sys.executable, "-m", "topos_cli.console_script", *command, "--help"],
        capture_output=True,
        text=True,
        env=environment,
        check=True,
    )
    return "\n".join(line.rstrip() for line in completed.stdout.strip().splitlines())


def reference_page() -> str:
    """The whole page."""
    sections = [INTRODUCTION]
    for command in COMMANDS:
        name = " ".join(("topos", *command))
        sections.append(f"## {name}\n\n```text\n{help_text(command)}\n```\n")
    return "\n".join(sections)


def main() -> int:
    """Writes the page, or with `--check` says whether the committed one is current."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    options = parser.parse_args()
    page = reference_page()
    if options.check:
        current = PAGE.read_text(encoding="utf-8") == page
        print("docs/reference/cli.md is current" if current else "docs/reference/cli.md is stale")
        return 0 if current else 1
    PAGE.write_text(page, encoding="utf-8")
    print(PAGE)
    return 0


if __name__ == "__main__":
    sys.exit(main())

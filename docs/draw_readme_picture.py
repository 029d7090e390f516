"""Draws the README's picture from the committed result beside this script, so the picture
is always what topos draws of a real grade today and cannot go stale:

    PYTHONPATH=$PWD python docs/draw_readme_picture.py [--result FILE] [--output FILE]

The result (`docs/readme-result.json`) was made by

    PYTHONPATH=$PWD python -m topos_cli.console_script grade --workload mnist \\
        --steps 60 --repeat 2 --json docs/readme-result.json

on the shared two-core development machine; grade again and rerun this script to
refresh both. The picture is the main panels `topos report RESULT --png` draws.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: The committed result the picture is drawn from, and where the README finds the picture.
RESULT = HERE / "readme-result.json"
PICTURE = HERE / "grade-mnist.png"


def draw_readme_picture(result: Path = RESULT, output: Path = PICTURE) -> Path:
    """Draws the overview of `result` as a PNG at `output`; returns `output`."""
    from topos_cli.render.report_html import write_report

    written, _ = write_report(result, png_path=output)
    return written[0]


def main(arguments: Sequence[str] | None = None) -> int:
    """Draws the picture where asked (the README's place by default) and names it."""
    parser = argparse.ArgumentParser(description="Draw the README's picture of a grade.")
    parser.add_argument("--result", type=Path, default=RESULT)
    parser.add_argument("--output", type=Path, default=PICTURE)
    options = parser.parse_args(arguments)
    print(draw_readme_picture(options.result, options.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())

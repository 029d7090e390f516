"""Writes docs/reference/vocabulary.md from the library (`topos.vocabulary`), so the page
cannot claim a name the library lacks (a test checks the committed page against a fresh one).

    PYTHONPATH=$PWD python docs/write_vocabulary.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "reference" / "vocabulary.md"


def main() -> int:
    """Writes the page, or with `--check` says whether the committed one is current."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    options = parser.parse_args()
    from topos.vocabulary import page

    fresh = page()
    if options.check:
        if not PAGE.exists() or PAGE.read_text() != fresh:
            print(f"{PAGE} is stale: run PYTHONPATH=$PWD python docs/write_vocabulary.py")
            return 1
        return 0
    PAGE.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
